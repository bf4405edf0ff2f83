import { isUtf8 } from 'node:buffer';
import { contextOf, mayBePersonal, shapeOfBytes, shapeOf, unmappedValueKind, type GuardKind } from '../../../drift-guard/index.ts';
import { formatPath, parentContext } from '../../../drift-guard/index.ts';
import type { ObjectGuard, PathTree } from '../../../drift-guard/index.ts';
import type { PlaceStep } from '../../../json-bytes/scan.ts';
import { StreamError } from '../../stream-error.ts';
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
 * place: a string (and bytes that are UTF-8 text) is decoded only when its bytes have a guarded
 * kind's shape, an integer only when it can have 5 digits or more, and mapped subtrees are
 * skipped. A map entry's key names its value as a field name does (`attributes{mobile}`); fields
 * the schema does not declare (a newer writer's, carried as unknown fields) are looked at too:
 * length-delimited ones as text and as a message, integers as their digits. Floats, bools, enums
 * and imported-type fields hold nothing to look at.
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
  look: 'message' | 'string' | 'bytes' | 'integer';
  /** the pipeline path of the field's values, for a finding */
  path: string;
  /** the context of the field's name (contextOf), or of its parent's where the name is neutral; a map entry's value takes its key's */
  hints: number;
  /** a message: its type, and (once met) its level */
  nested?: ProtoMessage;
  /** the nested message is a map's entry ({key, value}) */
  entry?: true;
  place?: PathTree;
  steps: PlaceStep[];
  level?: Level;
}

/** a message at a place: its steps by field number (absent: skipped), the numbers its schema declares, and whether it is a map's entry */
interface Level {
  steps: Map<number, Step>;
  declared: Set<number>;
  path: string;
  entry: boolean;
}

// per guard, the root message's level; deeper levels hang off their step, built when first met
const levels = new WeakMap<ObjectGuard, Map<ProtoMessage, Level>>();
/** levels deeper than this (a recursive message type) are built for the record and not kept */
const KEPT_DEPTH = 32;

function level(w: Omit<Walk, 'b'>, message: ProtoMessage, tree: PathTree | undefined, at: readonly PlaceStep[], isEntry = false): Level {
  const out: Level = { steps: new Map(), declared: new Set(message.fields.map((f) => f.number)), path: formatPath(at), entry: isEntry };
  for (const field of message.fields) {
    const entry = field.kind === 'map' && field.typeName !== undefined ? w.schema.messages.get(field.typeName) : undefined;
    const nested = field.kind === 'message' ? w.schema.messages.get(field.typeName!) : entry;
    if (nested === undefined && field.kind !== 'string' && field.kind !== 'bytes' && !INTEGERS.has(field.kind)) continue;
    const each = field.repeated || entry !== undefined;
    const steps: PlaceStep[] = each ? [...at, field.name, null] : [...at, field.name];
    let place = w.guard.child(tree, field.name);
    if (each) place = w.guard.element(place);
    if (w.guard.isMapped(place) || w.guard.allowed(steps)) continue;
    const look = nested !== undefined ? 'message' : field.kind === 'string' || field.kind === 'bytes' ? field.kind : 'integer';
    // a map entry's key is data (checked as a key is), its value is named by the key at run time
    const own = isEntry ? 0 : contextOf(field.name);
    const hints = own !== 0 || isEntry ? own : parentContext(steps);
    out.steps.set(field.number, {
      field,
      look,
      path: formatPath(steps),
      hints,
      steps,
      ...(nested ? { nested } : {}),
      ...(place ? { place } : {}),
      ...(entry ? { entry: true } : {}),
    });
  }
  return out;
}

/** the guard's readers: one per message level (a nested walk has its own) */
const readers = new WireReaders();

function walk(w: Walk, from: number, to: number, fields: Level, depth: number): ProtoFinding | undefined {
  const keyHints = fields.entry ? entryKeyContext(w.b, from, to, depth) : 0;
  const f = readers.at(depth, w.b, from, to);
  while (f.next()) {
    const step = fields.steps.get(f.number);
    if (step === undefined) {
      const found = fields.declared.has(f.number)
        ? undefined
        : unknownFinding(w, f.wireType, f.valueStart, f.end, `${fields.path === '' ? '' : `${fields.path}.`}#${f.number}`, depth + 1, 0);
      if (found !== undefined) return found;
      continue;
    }
    const hints = fields.entry && f.number === 2 ? keyHints : step.hints;
    const found =
      step.look === 'message'
        ? f.wireType === WIRE.len
          ? walk(w, f.valueStart, f.end, levelOf(w, step), depth + 1)
          : malformed(step.field)
        : step.look === 'integer'
          ? integerFinding(w, f.wireType, f.valueStart, f.end, step, hints)
          : stringFinding(w, f.wireType, f.valueStart, f.end, step, hints);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** the context of a map entry's key (field 1) when it is a short string: what it says of the entry's value (`mobile`, `fullName`) */
function entryKeyContext(b: Buffer, from: number, to: number, depth: number): number {
  // this depth's reader, before the entry's walk takes it back
  const f = readers.at(depth, b, from, to);
  while (f.next()) {
    if (f.number !== 1) continue;
    if (f.wireType !== WIRE.len || f.end - f.valueStart > 64) return 0;
    return contextOf(b.toString('utf8', f.valueStart, f.end));
  }
  return 0;
}

/** how deep messages inside an undeclared field are walked */
const UNKNOWN_DEPTH = 8;

/**
 * A field the message's schema does not declare: a length-delimited value is checked as text
 * (valid UTF-8), then as a message of unknown fields; a varint or a 64-bit value as its digits.
 */
function unknownFinding(w: Walk, wireType: number, from: number, to: number, path: string, depth: number, nesting: number): ProtoFinding | undefined {
  const threshold = w.guard.threshold;
  const check = (text: string) => {
    const kind = unmappedValueKind(text, '', 0, threshold);
    return kind === undefined ? undefined : { path, kind };
  };
  if (wireType === WIRE.varint) return check(String(readVarint(w.b, from)[0]));
  if (wireType === WIRE.i64) return check(String(w.b.readBigUInt64LE(from)));
  if (wireType !== WIRE.len) return undefined;
  const bytes = w.b.subarray(from, to);
  if (to - from >= 5 && to - from <= 254 && isUtf8(bytes)) {
    const found = check(w.b.toString('utf8', from, to));
    if (found !== undefined) return found;
  }
  if (nesting >= UNKNOWN_DEPTH) return undefined;
  try {
    const f = readers.at(depth, w.b, from, to);
    while (f.next()) {
      const found = unknownFinding(w, f.wireType, f.valueStart, f.end, path, depth + 1, nesting + 1);
      if (found !== undefined) return found;
    }
  } catch {
    // not a message: text or bytes, looked at above
  }
  return undefined;
}

function levelOf(w: Walk, step: Step): Level {
  if (step.level !== undefined) return step.level;
  const next = level(w, step.nested!, step.place, step.steps, step.entry === true);
  if (step.steps.length <= KEPT_DEPTH) step.level = next;
  return next;
}

function stringFinding(w: Walk, wireType: number, from: number, to: number, step: Step, hints: number): ProtoFinding | undefined {
  if (wireType !== WIRE.len) return malformed(step.field);
  // mayBePersonal's length gate, before a pass over the bytes
  if (to - from < 5 || to - from > 254) return undefined;
  if (!mayBePersonal(shapeOfBytes(w.b, from, to), hints)) return undefined;
  if (step.look === 'bytes' && !isUtf8(w.b.subarray(from, to))) return undefined;
  const kind = unmappedValueKind(w.b.toString('utf8', from, to), step.field.name, hints, w.guard.threshold);
  return kind === undefined ? undefined : { path: step.path, kind };
}

/** each value of an integer field occurrence (several when packed) */
function integerFinding(w: Walk, wireType: number, from: number, to: number, step: Step, hints: number): ProtoFinding | undefined {
  const { field } = step;
  const check = (text: string) => integerTextFinding(text, step, hints, w.guard.threshold);
  if (wireType === WIRE.varint) return fewDigits(w.b, from, to, field) ? undefined : check(integerText(w.b, from, field));
  if (wireType === WIRE.i64) return check(field.kind === 'sfixed64' ? String(w.b.readBigInt64LE(from)) : String(w.b.readBigUInt64LE(from)));
  if (wireType === WIRE.i32) return check(field.kind === 'sfixed32' ? String(w.b.readInt32LE(from)) : String(w.b.readUInt32LE(from)));
  if (wireType !== WIRE.len) return malformed(field);
  // packed: varints, or fixed widths — whole ones, inside the field (a run cut short is malformed, never read past)
  const width = field.kind.includes('fixed64') ? 8 : field.kind.includes('fixed32') ? 4 : 0;
  if (width > 0 && (to - from) % width !== 0) return malformed(field);
  for (let pos = from; pos < to;) {
    let text: string;
    if (width === 8) text = field.kind === 'sfixed64' ? String(w.b.readBigInt64LE(pos)) : String(w.b.readBigUInt64LE(pos));
    else if (width === 4) text = field.kind === 'sfixed32' ? String(w.b.readInt32LE(pos)) : String(w.b.readUInt32LE(pos));
    else text = integerText(w.b, pos, field);
    pos = width > 0 ? pos + width : readVarint(w.b, pos)[1];
    if (pos > to) return malformed(field);
    const found = check(text);
    if (found !== undefined) return found;
  }
  return undefined;
}

function integerTextFinding(text: string, step: Step, hints: number, threshold: number): ProtoFinding | undefined {
  const kind = mayBePersonal(shapeOf(text), hints) ? unmappedValueKind(text, step.field.name, hints, threshold) : undefined;
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
    case 'int32':
      return String(BigInt.asIntN(32, v));
    case 'int64':
      return String(BigInt.asIntN(64, v));
    case 'uint32':
      return String(BigInt.asUintN(32, v));
    case 'sint32':
    case 'sint64':
      return String((v >> 1n) ^ -(v & 1n));
    default:
      return String(v);
  }
}

function malformed(field: ProtoField): never {
  throw new StreamError('RECORD_MALFORMED', `field ${field.name} is not encoded as its schema says`);
}
