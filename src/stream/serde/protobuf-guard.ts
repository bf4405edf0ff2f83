import { fieldHints, mayBePersonal, shapeOfBytes, shapeOf, unmappedValueKind, type GuardKind } from '../../discover/guard.ts';
import { formatPath } from '../../discover/json-guard.ts';
import type { ObjectGuard, PathTree } from '../../discover/object-guard.ts';
import type { PlaceStep } from '../../json-bytes/scan.ts';
import { StreamError } from '../stream-error.ts';
import type { ProtoField, ProtoMessage, ProtoSchema } from './protobuf-schema.ts';
import { readVarint, WIRE, WireReader } from './protobuf-wire.ts';

/** A finding of the guard in a Protobuf message: where and what kind, never the value. */
export interface ProtoFinding {
  path: string;
  kind: GuardKind;
}

/** Integer kinds whose values may be identifiers (cards, national numbers, phones): the others hold no digits worth a look. */
const INTEGERS = new Set(['int32', 'int64', 'uint32', 'uint64', 'sint32', 'sint64', 'fixed32', 'fixed64', 'sfixed32', 'sfixed64']);
const byNumber = new WeakMap<ProtoMessage, Map<number, ProtoField>>();

function fieldsOf(message: ProtoMessage): Map<number, ProtoField> {
  let fields = byNumber.get(message);
  if (fields === undefined) byNumber.set(message, (fields = new Map(message.fields.map((f) => [f.number, f]))));
  return fields;
}

/**
 * The unmapped guard over a Protobuf message on the wire: the first finding at a path no mapping
 * (and no mapped tag) names, if any. What decodeMessage would show the guard — strings, integers
 * as their digits, maps as `{key, value}` entries, nested and repeated messages — is walked in
 * place: a string is decoded only when its bytes have a guarded kind's shape, an integer only
 * when it can have 5 digits or more, and mapped subtrees are skipped. Bytes, floats, bools, enums,
 * unknown and imported-type fields hold nothing to look at.
 */
export function protoFinding(b: Buffer, from: number, to: number, message: ProtoMessage, schema: ProtoSchema, guard: ObjectGuard): ProtoFinding | undefined {
  return walk({ b, schema, guard, steps: [] }, from, to, message, guard.root());
}

interface Walk {
  b: Buffer;
  schema: ProtoSchema;
  guard: ObjectGuard;
  steps: PlaceStep[];
}

function walk(w: Walk, from: number, to: number, message: ProtoMessage, tree: PathTree | undefined): ProtoFinding | undefined {
  const fields = fieldsOf(message);
  // one reader per message level: a nested walk has its own
  const f = new WireReader(w.b, from, to);
  while (f.next()) {
    const field = fields.get(f.number);
    if (field === undefined) continue;
    const entry = field.kind === 'map' && field.typeName !== undefined ? w.schema.messages.get(field.typeName) : undefined;
    const nested = field.kind === 'message' ? w.schema.messages.get(field.typeName!) : entry;
    if (nested === undefined && field.kind !== 'string' && !INTEGERS.has(field.kind)) continue;
    w.steps.push(field.name);
    let place = w.guard.child(tree, field.name);
    if (field.repeated || entry !== undefined) {
      w.steps.push(null);
      place = w.guard.element(place);
    }
    const found = w.guard.isMapped(place) || w.guard.allowed(w.steps) ? undefined
      : nested !== undefined ? (f.wireType === WIRE.len ? walk(w, f.valueStart, f.end, nested, place) : malformed(field))
      : field.kind === 'string' ? stringFinding(w, f.wireType, f.valueStart, f.end, field)
      : integerFinding(w, f.wireType, f.valueStart, f.end, field);
    if (field.repeated || entry !== undefined) w.steps.pop();
    w.steps.pop();
    if (found !== undefined) return found;
  }
  return undefined;
}

function stringFinding(w: Walk, wireType: number, from: number, to: number, field: ProtoField): ProtoFinding | undefined {
  if (wireType !== WIRE.len) return malformed(field);
  const hints = fieldHints(field.name);
  if (!mayBePersonal(shapeOfBytes(w.b, from, to), hints)) return undefined;
  const kind = unmappedValueKind(w.b.toString('utf8', from, to), field.name, hints);
  return kind === undefined ? undefined : { path: formatPath(w.steps), kind };
}

/** each value of an integer field occurrence (several when packed) */
function integerFinding(w: Walk, wireType: number, from: number, to: number, field: ProtoField): ProtoFinding | undefined {
  const hints = fieldHints(field.name);
  const one = (text: string) => {
    const kind = mayBePersonal(shapeOf(text), hints) ? unmappedValueKind(text, field.name, hints) : undefined;
    return kind === undefined ? undefined : { path: formatPath(w.steps), kind };
  };
  if (wireType === WIRE.varint) return one(integerText(w.b, from, field));
  if (wireType === WIRE.i64) return one(field.kind === 'sfixed64' ? String(w.b.readBigInt64LE(from)) : String(w.b.readBigUInt64LE(from)));
  if (wireType === WIRE.i32) return one(field.kind === 'sfixed32' ? String(w.b.readInt32LE(from)) : String(w.b.readUInt32LE(from)));
  if (wireType !== WIRE.len) return malformed(field);
  // packed: varints, or fixed widths
  const width = field.kind.includes('fixed64') ? 8 : field.kind.includes('fixed32') ? 4 : 0;
  for (let pos = from; pos < to;) {
    let text: string;
    if (width === 8) text = field.kind === 'sfixed64' ? String(w.b.readBigInt64LE(pos)) : String(w.b.readBigUInt64LE(pos));
    else if (width === 4) text = field.kind === 'sfixed32' ? String(w.b.readInt32LE(pos)) : String(w.b.readUInt32LE(pos));
    else text = integerText(w.b, pos, field);
    pos = width > 0 ? pos + width : readVarint(w.b, pos)[1];
    const found = one(text);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** a varint's value as the field's kind reads it, in digits */
function integerText(b: Buffer, pos: number, field: ProtoField): string {
  const [v] = readVarint(b, pos);
  switch (field.kind) {
    case 'int32': return String(BigInt.asIntN(32, v));
    case 'int64': return String(BigInt.asIntN(64, v));
    case 'uint32': return String(BigInt.asUintN(32, v));
    case 'sint32': case 'sint64': return String((v >> 1n) ^ -(v & 1n));
    default: return String(v);
  }
}

function malformed(field: ProtoField): never {
  throw new StreamError('RECORD_MALFORMED', `field ${field.name} is not encoded as its schema says`);
}
