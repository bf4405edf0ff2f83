import { schemaUnfit } from '../../stream-error.ts';
import type { ProtoField, ProtoMessage, ProtoSchema } from './protobuf-schema.ts';

/** What to do at one message: per field number, protect it (a leaf) or walk into it (a child). */
export interface PlanNode {
  fields: Map<number, PlanEntry>;
  /** every mapped path below this node, for the `missing: dead-letter` check */
  leafPaths: string[];
}

export interface PlanEntry {
  field: ProtoField;
  /** a leaf: the mapped path, whose transform protects the field's values */
  path?: string;
  child?: PlanNode;
}

/** A field whose type the clean schema makes `string` (same name, same number). */
export interface Retype {
  message: string;
  field: number;
}

const NOT_PROTECTABLE = new Set(['bytes', 'message', 'map', 'group', 'external']);

/**
 * Resolves the pipeline's record paths against the record's message type: each segment a field
 * name (exactly as the schema writes it), `[]` after a repeated field. A path whose field the
 * schema lacks is a SCHEMA_PATH_UNKNOWN StreamError naming it (the first in mapping order): the schema is
 * refused for the pipeline. A path the schema contradicts is an error too: it walks into a
 * scalar, a map, a type from another file, or a repeated field without `[]`; or it ends at a
 * message, map or bytes field. Non-string leaves are retyped to `string` in the clean schema,
 * which is refused when their message type is used in more than one place (the other uses keep
 * their type on the wire).
 */
export function compilePlan(schema: ProtoSchema, root: ProtoMessage, paths: readonly string[]): { plan: PlanNode; retypes: Retype[] } {
  const plan = node();
  const retypes: Retype[] = [];
  for (const path of paths) addPath(schema, root, plan, path, retypes);
  const uses = typeUses(schema, root.fullName);
  for (const r of retypes) {
    if ((uses.get(r.message) ?? 0) > 1) {
      const field = schema.messages.get(r.message)!.fields.find((f) => f.number === r.field)!;
      throw schemaUnfit(`message type ${r.message} is used in more than one place; its field ${field.name} cannot become a string for one use only`);
    }
  }
  return { plan, retypes };
}

function node(): PlanNode {
  return { fields: new Map(), leafPaths: [] };
}

function addPath(schema: ProtoSchema, root: ProtoMessage, plan: PlanNode, path: string, retypes: Retype[]): void {
  const segments = path.split('.');
  let message = root;
  let at = plan;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    const name = seg.replace(/\[\]$/, '');
    const walked = segments.slice(0, i + 1).join('.');
    at.leafPaths.push(path);
    const field = message.fields.find((f) => f.name === name);
    if (!field) throw schemaUnfit(`${path}: message ${message.fullName} has no field ${name} (field names match exactly)`, path);
    if (field.repeated !== seg.endsWith('[]')) {
      throw schemaUnfit(field.repeated ? `${walked}: field ${name} is repeated, write ${name}[]` : `${walked}: field ${name} is not repeated`);
    }
    const last = i === segments.length - 1;
    if (last) {
      if (NOT_PROTECTABLE.has(field.kind)) throw schemaUnfit(`${path} ends at a ${field.kind} field; only scalars and enums are protected`);
      if (at.fields.has(field.number)) throw schemaUnfit(`${path} is mapped twice`);
      at.fields.set(field.number, { field, path });
      if (field.kind !== 'string') retypes.push({ message: message.fullName, field: field.number });
      return;
    }
    if (field.kind !== 'message') throw schemaUnfit(`${walked} is a ${field.kind} field; a path walks only into messages of this schema`);
    const entry = at.fields.get(field.number) ?? { field, child: node() };
    if (!entry.child) throw schemaUnfit(`${walked} is both protected and walked into`);
    at.fields.set(field.number, entry);
    at = entry.child;
    message = schema.messages.get(field.typeName!)!;
  }
}

/** How often each message type is used: once per field of that type in the file, once as the root. */
function typeUses(schema: ProtoSchema, rootName: string): Map<string, number> {
  const uses = new Map<string, number>([[rootName, 1]]);
  for (const m of schema.messages.values()) {
    for (const f of m.fields) {
      if (f.kind === 'message' && f.typeName) uses.set(f.typeName, (uses.get(f.typeName) ?? 0) + 1);
    }
  }
  return uses;
}
