import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { readSmallVarint, WIRE, wireFields } from './protobuf-wire.ts';
import type { TaggedField } from '../schema-tags.ts';
import { schemaUnfit } from '../../stream-error.ts';

export type ScalarKind =
  | 'double'
  | 'float'
  | 'int64'
  | 'uint64'
  | 'int32'
  | 'fixed64'
  | 'fixed32'
  | 'bool'
  | 'string'
  | 'bytes'
  | 'uint32'
  | 'sfixed32'
  | 'sfixed64'
  | 'sint32'
  | 'sint64';

/** A field as veil needs it: `external` is a type defined in another file (an import). */
export interface ProtoField {
  name: string;
  number: number;
  kind: ScalarKind | 'message' | 'enum' | 'group' | 'map' | 'external';
  /** full name, without the leading dot, of a message or enum type */
  typeName?: string;
  repeated: boolean;
  /** Confluent's `(confluent.field_meta).tags` on the field */
  tags?: string[];
}

export interface ProtoMessage {
  fullName: string;
  fields: ProtoField[];
  /** full names of the message types declared inside it, in the order message indexes count them */
  nested: string[];
}

/**
 * A Protobuf schema as the registry holds it: `.proto` text, or a serialized FileDescriptorProto in
 * base64 (what confluent-kafka-python registers). Messages and enums of the file by full name.
 */
export interface ProtoSchema {
  form: 'text' | 'descriptor';
  text: string;
  packageName: string;
  messages: Map<string, ProtoMessage>;
  enums: Map<string, Map<number, string>>;
  topLevel: string[];
}

const SCALARS = new Set<string>([
  'double',
  'float',
  'int64',
  'uint64',
  'int32',
  'fixed64',
  'fixed32',
  'bool',
  'string',
  'bytes',
  'uint32',
  'sfixed32',
  'sfixed64',
  'sint32',
  'sint64',
]);
/** FieldDescriptorProto.Type numbers, in order from 1 */
const DESCRIPTOR_TYPES = [
  '',
  'double',
  'float',
  'int64',
  'uint64',
  'int32',
  'fixed64',
  'fixed32',
  'bool',
  'string',
  'group',
  'message',
  'bytes',
  'uint32',
  'enum',
  'sfixed32',
  'sfixed64',
  'sint32',
  'sint64',
] as const;
const LABEL_REPEATED = 3;

export function parseProtoSchema(text: string): ProtoSchema {
  const trimmed = text.trim();
  if (/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) && !/^(syntax|edition|package|message)\b/.test(trimmed)) return fromDescriptor(trimmed, text);
  return fromText(text);
}

/** The message type a record's message indexes name: the nth top-level message, then nested ones. */
export function messageAt(schema: ProtoSchema, indexes: readonly number[]): ProtoMessage | undefined {
  let list = schema.topLevel;
  let found: ProtoMessage | undefined;
  for (const i of indexes) {
    const name = list[i];
    found = name === undefined ? undefined : schema.messages.get(name);
    if (!found) return undefined;
    list = found.nested;
  }
  return found;
}

interface DescriptorMessage {
  name?: string;
  field?: DescriptorField[];
  nestedType?: DescriptorMessage[];
  enumType?: DescriptorEnum[];
  options?: { mapEntry?: boolean };
}
interface DescriptorField {
  name?: string;
  number?: number;
  label?: number;
  type?: number;
  typeName?: string;
}
interface DescriptorEnum {
  name?: string;
  value?: { name?: string; number?: number }[];
}

function fromDescriptor(base64: string, text: string): ProtoSchema {
  let file: { package?: string; messageType?: DescriptorMessage[]; enumType?: DescriptorEnum[] };
  try {
    file = descriptor.FileDescriptorProto.decode(Buffer.from(base64, 'base64')) as typeof file;
  } catch {
    throw schemaUnfit('it is neither .proto text nor a serialized FileDescriptorProto');
  }
  const schema: ProtoSchema = { form: 'descriptor', text, packageName: file.package ?? '', messages: new Map(), enums: new Map(), topLevel: [] };
  const mapEntries = new Set<string>();
  const addEnum = (e: DescriptorEnum, scope: string) => {
    schema.enums.set(join(scope, e.name ?? ''), new Map((e.value ?? []).map((v) => [v.number ?? 0, v.name ?? ''])));
  };
  const addMessage = (m: DescriptorMessage, scope: string): string => {
    const fullName = join(scope, m.name ?? '');
    if (m.options?.mapEntry) mapEntries.add(fullName);
    const nested = (m.nestedType ?? []).map((n) => addMessage(n, fullName));
    (m.enumType ?? []).forEach((e) => addEnum(e, fullName));
    const fields = (m.field ?? []).map((f): ProtoField => ({
      name: f.name ?? '',
      number: f.number ?? 0,
      repeated: f.label === LABEL_REPEATED,
      kind: DESCRIPTOR_TYPES[f.type ?? 0] || 'external',
      typeName: f.typeName?.replace(/^\./, ''),
    }));
    schema.messages.set(fullName, { fullName, fields, nested });
    return fullName;
  };
  schema.topLevel = (file.messageType ?? []).map((m) => addMessage(m, schema.packageName));
  (file.enumType ?? []).forEach((e) => addEnum(e, schema.packageName));
  for (const [key, tags] of descriptorTags(Buffer.from(base64, 'base64'), schema.packageName)) {
    const [message, number] = key.split('#') as [string, string];
    const field = schema.messages.get(message)?.fields.find((f) => f.number === Number(number));
    if (field) field.tags = tags;
  }
  for (const m of schema.messages.values()) {
    for (const f of m.fields) {
      if (f.kind === 'message' && f.typeName && mapEntries.has(f.typeName)) f.kind = 'map';
      else if ((f.kind === 'message' || f.kind === 'enum') && f.typeName && !schema.messages.has(f.typeName) && !schema.enums.has(f.typeName))
        f.kind = 'external';
    }
  }
  return schema;
}

function fromText(text: string): ProtoSchema {
  let parsed: protobuf.IParserResult;
  try {
    parsed = protobuf.parse(text, { keepCase: true });
  } catch (e) {
    // protobufjs's message names the line and token, never more of the text
    throw schemaUnfit(`it is not .proto text protobufjs can read (${(e as Error).message.slice(0, 200)})`);
  }
  const schema: ProtoSchema = { form: 'text', text, packageName: parsed.package ?? '', messages: new Map(), enums: new Map(), topLevel: [] };
  const pending: { message: ProtoMessage; field: protobuf.Field; scope: string }[] = [];
  const visit = (ns: protobuf.NamespaceBase, top: boolean): string[] => {
    const names: string[] = [];
    for (const item of ns.nestedArray) {
      if (item instanceof protobuf.Type) {
        const fullName = item.fullName.replace(/^\./, '');
        const message: ProtoMessage = { fullName, fields: [], nested: [] };
        schema.messages.set(fullName, message);
        message.nested = visit(item, false);
        for (const field of item.fieldsArray) pending.push({ message, field, scope: fullName });
        names.push(fullName);
      } else if (item instanceof protobuf.Enum) {
        schema.enums.set(item.fullName.replace(/^\./, ''), new Map(Object.entries(item.values).map(([k, v]) => [v, k])));
      } else if (item instanceof protobuf.Namespace && top) {
        names.push(...visit(item, true));
      }
    }
    return names;
  };
  schema.topLevel = visit(parsed.root, true);
  for (const { message, field, scope } of pending) message.fields.push(textField(schema, field, scope));
  return schema;
}

function textField(schema: ProtoSchema, field: protobuf.Field, scope: string): ProtoField {
  const tags = textTags(field);
  const base = { name: field.name, number: field.id, repeated: field.repeated, ...(tags.length ? { tags } : {}) };
  if (field instanceof protobuf.MapField) return { ...base, kind: 'map', typeName: mapEntry(schema, field, scope) };
  if (SCALARS.has(field.type)) return { ...base, kind: field.type as ScalarKind };
  const typeName = resolveName(schema, field.type, scope);
  if (typeName === undefined) return { ...base, kind: 'external', typeName: field.type };
  return { ...base, kind: schema.messages.has(typeName) ? 'message' : 'enum', typeName };
}

// FieldOptions' extension field_meta (Confluent's confluent/meta.proto), and Meta.tags
const FIELD_META = 1088;
const META_TAGS = 3;

/**
 * The tags of a `.proto` text field: `[(confluent.field_meta).tags = "PII"]` (repeatable) and
 * `[(confluent.field_meta) = { tags: ["PII", "PCI"] }]`, as protobufjs parses the options.
 */
function textTags(field: protobuf.Field): string[] {
  const tags: string[] = [];
  for (const option of (field.parsedOptions ?? []) as Record<string, unknown>[]) {
    const meta = option['(confluent.field_meta)'] as { tags?: unknown } | undefined;
    const value = meta?.tags;
    for (const t of Array.isArray(value) ? value : [value]) if (typeof t === 'string' && t !== '' && !tags.includes(t)) tags.push(t);
  }
  return tags;
}

/**
 * The tags of a FileDescriptorProto's fields (`message#number` → tags), read from the bytes:
 * protobufjs' descriptor types drop the unknown extension `(confluent.field_meta)` (1088 on
 * FieldOptions, a Meta whose field 3 holds the tags).
 */
function descriptorTags(file: Buffer, pkg: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const text = (b: Buffer, f: { valueStart: number; end: number }) => b.subarray(f.valueStart, f.end).toString('utf8');
  const message = (msg: Buffer, scope: string): void => {
    let name = '';
    for (const f of wireFields(msg)) if (f.number === 1 && f.wireType === WIRE.len) name = text(msg, f);
    const fullName = join(scope, name);
    for (const f of wireFields(msg)) {
      if (f.wireType !== WIRE.len) continue;
      if (f.number === 3) message(msg.subarray(f.valueStart, f.end), fullName);
      if (f.number !== 2) continue;
      const field = msg.subarray(f.valueStart, f.end);
      let number = -1;
      const tags: string[] = [];
      for (const g of wireFields(field)) {
        if (g.number === 3 && g.wireType === WIRE.varint) number = readSmallVarint(field, g.valueStart, 'a field number')[0];
        if (g.number !== 8 || g.wireType !== WIRE.len) continue;
        for (const o of wireFields(field, g.valueStart, g.end)) {
          if (o.number !== FIELD_META || o.wireType !== WIRE.len) continue;
          for (const m of wireFields(field, o.valueStart, o.end))
            if (m.number === META_TAGS && m.wireType === WIRE.len && !tags.includes(text(field, m))) tags.push(text(field, m));
        }
      }
      if (tags.length) out.set(`${fullName}#${number}`, tags);
    }
  };
  try {
    for (const f of wireFields(file)) if (f.number === 4 && f.wireType === WIRE.len) message(file.subarray(f.valueStart, f.end), pkg);
  } catch {
    return out; // protobufjs decoded the file already: what does not frame here holds no tag veil can read
  }
  return out;
}

/**
 * The fields of `root`'s message type (and the message types under it) that carry Confluent
 * tags, each with its pipeline path: field names joined by dots, `[]` after a repeated field. A
 * tagged field under a map (`name.*`), or under a message type that contains itself (the tags
 * under it, at `*`), has no pipeline path (`reachable` false); imported types are not seen.
 */
export function protoTaggedFields(schema: ProtoSchema, root: ProtoMessage): TaggedField[] {
  const out: TaggedField[] = [];
  const tagsUnder = (name: string, seen: Set<string>): string[] => {
    if (seen.has(name)) return [];
    seen.add(name);
    const tags = new Set<string>();
    for (const f of schema.messages.get(name)?.fields ?? []) {
      for (const t of f.tags ?? []) tags.add(t);
      if (f.typeName !== undefined && (f.kind === 'message' || f.kind === 'map')) for (const t of tagsUnder(f.typeName, seen)) tags.add(t);
    }
    return [...tags];
  };
  const walk = (message: ProtoMessage, path: string, reachable: boolean, stack: readonly string[]): void => {
    if (stack.includes(message.fullName)) {
      const below = tagsUnder(message.fullName, new Set());
      if (below.length) out.push({ path: join(path, '*'), tags: below, reachable: false });
      return;
    }
    const inside = [...stack, message.fullName];
    for (const f of message.fields) {
      const at = join(path, f.repeated && f.kind !== 'map' ? `${f.name}[]` : f.name);
      if (f.tags?.length) out.push({ path: at, tags: f.tags, reachable: reachable && f.kind !== 'map' });
      const next = f.typeName === undefined ? undefined : schema.messages.get(f.typeName);
      if (next === undefined) continue;
      if (f.kind === 'message') walk(next, at, reachable, inside);
      else if (f.kind === 'map') {
        // into the entries' values, where they are messages: the key is data, `*`
        const value = next.fields.find((v) => v.number === 2);
        const valueType = value?.kind === 'message' && value.typeName !== undefined ? schema.messages.get(value.typeName) : undefined;
        if (valueType !== undefined) walk(valueType, join(path, `${f.name}.*`), false, inside);
      }
    }
  };
  walk(root, '', true, []);
  return out;
}

/**
 * A map field's entry message, as protoc makes it (`map<string, Card> cards_by_id` is a repeated
 * `CardsByIdEntry { string key = 1; Card value = 2; }` nested in its message): added to the
 * messages by full name — not to the nested list, which message indexes count — so that a map's
 * entries can be decoded and a message type used as a map value counts as used there.
 */
function mapEntry(schema: ProtoSchema, field: protobuf.MapField, scope: string): string {
  const fullName = join(
    scope,
    `${field.name
      .split('_')
      .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
      .join('')}Entry`,
  );
  const value: ProtoField = SCALARS.has(field.type)
    ? { name: 'value', number: 2, repeated: false, kind: field.type as ScalarKind }
    : (() => {
        const typeName = resolveName(schema, field.type, scope);
        if (typeName === undefined) return { name: 'value', number: 2, repeated: false, kind: 'external', typeName: field.type };
        return { name: 'value', number: 2, repeated: false, kind: schema.messages.has(typeName) ? 'message' : 'enum', typeName };
      })();
  if (!schema.messages.has(fullName))
    schema.messages.set(fullName, { fullName, fields: [{ name: 'key', number: 1, repeated: false, kind: field.keyType as ScalarKind }, value], nested: [] });
  return fullName;
}

/** Protobuf's scoping: a relative name is looked up from the innermost scope outwards. */
function resolveName(schema: ProtoSchema, name: string, scope: string): string | undefined {
  const known = (n: string) => schema.messages.has(n) || schema.enums.has(n);
  if (name.startsWith('.')) return known(name.slice(1)) ? name.slice(1) : undefined;
  for (let s = scope; ; s = s.includes('.') ? s.slice(0, s.lastIndexOf('.')) : '') {
    const candidate = join(s, name);
    if (known(candidate)) return candidate;
    if (s === '') return undefined;
  }
}

function join(scope: string, name: string): string {
  return scope ? `${scope}.${name}` : name;
}
