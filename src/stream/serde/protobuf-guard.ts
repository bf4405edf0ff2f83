import { fieldHints, mayBePersonal, shapeOfBytes, shapeOf, unmappedValueKind, type GuardKind } from '../../discover/guard.ts';
import { formatPath } from '../../discover/json-guard.ts';
import type { ObjectGuard, PathTree } from '../../discover/object-guard.ts';
import type { PlaceStep } from '../../json-bytes/scan.ts';
import { StreamError } from '../stream-error.ts';
import type { ProtoField, ProtoMessage, ProtoSchema } from './protobuf-schema.ts';
import { readVarint, WIRE, WireReaders } from './protobuf-wire.ts';

/** A finding of the guard in a Protobuf message: where and what kind, never the value. */
export interface ProtoFinding {
  path: string;
  kind: GuardKind;
}

/** Integer kinds whose values may be identifiers (cards, national numbers, phones): the others hold no digits worth a look. */
const INTEGERS = new Set(['int32', 'int64', 'uint32', 'uint64', 'sint32', 'sint64', 'fixed32', 'fixed64', 'sfixed32', 'sfixed64']);

/**
 * The unmapped guard over a Protobuf message on the wire: the first finding at a path no mapping
 * (and no mapped tag) names, if any. What decodeMessage would show the guard — strings, integers
 * as their digits, maps as `{key, value}` entries, nested and repeated messages — is walked in
 * place: a string is decoded only when its bytes have a guarded kind's shape, an integer only
 * when it can have 5 digits or more, and mapped subtrees are skipped. Bytes, floats, bools, enums,
 * unknown and imported-type fields hold nothing to look at.
 */
export function protoFinding(b: Buffer, from: number, to: number, message: ProtoMessage, schema: ProtoSchema, guard: ObjectGuard): ProtoFinding | undefined {
  let roots = levels.get(guard);
  if (roots === undefined) levels.set(guard, (roots = new Map()));
  let root = roots.get(message);
  if (root === undefined) roots.set(message, (root = level({ schema, guard }, message, guard.root(), [])));
  try {
    return walk({ b, schema, guard }, from, to, root, 0);
  } finally {
    readers.release();
  }
}

interface Walk {
  b: Buffer;
  schema: ProtoSchema;
  guard: ObjectGuard;
}

/**
 * What the walk does at one field of a message at one place in the record, decided once per
 * guard and place (a record's walk asks no path tree, allowed path or name again): nothing (mapped,
 * allowed, or nothing to look at), walk into a message, or look at a string's or integer's values.
 */
interface Step {
  field: ProtoField;
  look: 'message' | 'string' | 'integer';
  /** the pipeline path of the field's values, for a finding */
  path: string;
  hints: number;
  /** a message: its type, and (once met) its level */
  nested?: ProtoMessage;
  place?: PathTree;
  steps: PlaceStep[];
  level?: Level;
}

/** a message at a place: its steps by field number (absent: skipped) */
type Level = Map<number, Step>;

// per guard, the root message's level; deeper levels hang off their step, built when first met
const levels = new WeakMap<ObjectGuard, Map<ProtoMessage, Level>>();
/** levels deeper than this (a recursive message type) are built for the record and not kept */
const KEPT_DEPTH = 32;

function level(w: Omit<Walk, 'b'>, message: ProtoMessage, tree: PathTree | undefined, at: readonly PlaceStep[]): Level {
  const out: Level = new Map();
  for (const field of message.fields) {
    const entry = field.kind === 'map' && field.typeName !== undefined ? w.schema.messages.get(field.typeName) : undefined;
    const nested = field.kind === 'message' ? w.schema.messages.get(field.typeName!) : entry;
    if (nested === undefined && field.kind !== 'string' && !INTEGERS.has(field.kind)) continue;
    const each = field.repeated || entry !== undefined;
    const steps: PlaceStep[] = each ? [...at, field.name, null] : [...at, field.name];
    let place = w.guard.child(tree, field.name);
    if (each) place = w.guard.element(place);
    if (w.guard.isMapped(place) || w.guard.allowed(steps)) continue;
    const look = nested !== undefined ? 'message' : field.kind === 'string' ? 'string' : 'integer';
    out.set(field.number, { field, look, path: formatPath(steps), hints: fieldHints(field.name), steps, ...(nested ? { nested } : {}), ...(place ? { place } : {}) });
  }
  return out;
}

/** the guard's readers: one per message level (a nested walk has its own) */
const readers = new WireReaders();

function walk(w: Walk, from: number, to: number, fields: Level, depth: number): ProtoFinding | undefined {
  const f = readers.at(depth, w.b, from, to);
  while (f.next()) {
    const step = fields.get(f.number);
    if (step === undefined) continue;
    const found = step.look === 'message' ? (f.wireType === WIRE.len ? walk(w, f.valueStart, f.end, levelOf(w, step), depth + 1) : malformed(step.field))
      : step.look === 'string' ? stringFinding(w, f.wireType, f.valueStart, f.end, step)
      : integerFinding(w, f.wireType, f.valueStart, f.end, step);
    if (found !== undefined) return found;
  }
  return undefined;
}

function levelOf(w: Walk, step: Step): Level {
  if (step.level !== undefined) return step.level;
  const next = level(w, step.nested!, step.place, step.steps);
  if (step.steps.length <= KEPT_DEPTH) step.level = next;
  return next;
}

function stringFinding(w: Walk, wireType: number, from: number, to: number, step: Step): ProtoFinding | undefined {
  if (wireType !== WIRE.len) return malformed(step.field);
  // mayBePersonal's length gate, before a pass over the bytes
  if (to - from < 5 || to - from > 254) return undefined;
  if (!mayBePersonal(shapeOfBytes(w.b, from, to), step.hints)) return undefined;
  const kind = unmappedValueKind(w.b.toString('utf8', from, to), step.field.name, step.hints);
  return kind === undefined ? undefined : { path: step.path, kind };
}

/** each value of an integer field occurrence (several when packed) */
function integerFinding(w: Walk, wireType: number, from: number, to: number, step: Step): ProtoFinding | undefined {
  const { field } = step;
  if (wireType === WIRE.varint) return fewDigits(w.b, from, to, field) ? undefined : integerTextFinding(integerText(w.b, from, field), step);
  if (wireType === WIRE.i64) return integerTextFinding(field.kind === 'sfixed64' ? String(w.b.readBigInt64LE(from)) : String(w.b.readBigUInt64LE(from)), step);
  if (wireType === WIRE.i32) return integerTextFinding(field.kind === 'sfixed32' ? String(w.b.readInt32LE(from)) : String(w.b.readUInt32LE(from)), step);
  if (wireType !== WIRE.len) return malformed(field);
  // packed: varints, or fixed widths
  const width = field.kind.includes('fixed64') ? 8 : field.kind.includes('fixed32') ? 4 : 0;
  for (let pos = from; pos < to;) {
    let text: string;
    if (width === 8) text = field.kind === 'sfixed64' ? String(w.b.readBigInt64LE(pos)) : String(w.b.readBigUInt64LE(pos));
    else if (width === 4) text = field.kind === 'sfixed32' ? String(w.b.readInt32LE(pos)) : String(w.b.readUInt32LE(pos));
    else text = integerText(w.b, pos, field);
    pos = width > 0 ? pos + width : readVarint(w.b, pos)[1];
    const found = integerTextFinding(text, step);
    if (found !== undefined) return found;
  }
  return undefined;
}

function integerTextFinding(text: string, step: Step): ProtoFinding | undefined {
  const kind = mayBePersonal(shapeOf(text), step.hints) ? unmappedValueKind(text, step.field.name, step.hints) : undefined;
  return kind === undefined ? undefined : { path: step.path, kind };
}

/**
 * Whether the varint `b[from, to)` (one or two bytes: under 16,384) reads as 0 to 9,999 in the
 * field's kind: at most 4 characters, under every gate's length (mayBePersonal needs 5), so no
 * bigint or text is made for it (counts, quantities, small codes).
 */
function fewDigits(b: Buffer, from: number, to: number, field: ProtoField): boolean {
  if (to - from > 2) return false;
  const raw = to - from === 1 ? b[from]! : (b[from]! & 0x7f) | (b[from + 1]! << 7);
  // sint: zigzag, an odd value is negative (its '-' adds a character)
  if (field.kind === 'sint32' || field.kind === 'sint64') return (raw & 1) === 0 && raw / 2 < 10000;
  return raw < 10000;
}

/** a varint's value as the field's kind reads it, in digits */
function integerText(b: Buffer, pos: number, field: ProtoField): string {
  // up to four bytes (under 2^28, non-negative in every kind before zigzag): a number, no bigint
  let small = 0;
  for (let i = 0; i < 4 && pos + i < b.length; i++) {
    const byte = b[pos + i]!;
    small += (byte & 0x7f) * 2 ** (7 * i);
    if (byte < 0x80) return String(field.kind === 'sint32' || field.kind === 'sint64' ? (small % 2 === 0 ? small / 2 : -(small + 1) / 2) : small);
  }
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
