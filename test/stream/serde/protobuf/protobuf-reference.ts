// The Protobuf walk as it was before the one-buffer writer and the compiled guard levels
// (commit 1902d7e): the reference the property test holds the fast path to, byte for byte and
// error for error. Test-only; nothing in src imports it.
import { isUtf8 } from 'node:buffer';
import { contextOf, mayBePersonal, shapeOf, shapeOfBytes, unmappedValueKind } from '../../../../src/drift-guard/value-kinds.ts';
import { formatPath, parentContext } from '../../../../src/drift-guard/json-guard.ts';
import type { ObjectGuard, PathTree } from '../../../../src/drift-guard/object-guard.ts';
import type { PlaceStep } from '../../../../src/json-bytes/scan.ts';
import type { PlanNode } from '../../../../src/stream/serde/protobuf/protobuf-plan.ts';
import { scalarTexts, type ProtectContext } from '../../../../src/stream/serde/protobuf/protobuf-protect.ts';
import type { ProtoField, ProtoMessage, ProtoSchema } from '../../../../src/stream/serde/protobuf/protobuf-schema.ts';
import { readSmallVarint, readVarint, WIRE, type WireField } from '../../../../src/stream/serde/protobuf/protobuf-wire.ts';
import { StreamError } from '../../../../src/stream/stream-error.ts';

const malformed = (what: string) => new StreamError('RECORD_MALFORMED', `the Protobuf value is malformed: ${what}`);

function skipVarint(b: Uint8Array, pos: number): number {
  for (let i = 0; i < 10; i++) {
    if (pos >= b.length) throw malformed('a varint runs past the end');
    if (b[pos++]! < 0x80) return pos;
  }
  throw malformed('a varint is longer than 10 bytes');
}

function skipValue(b: Uint8Array, wireType: number, number: number, pos: number, to: number, lenStart: (s: number) => void): number {
  let end: number;
  switch (wireType) {
    case WIRE.varint:
      end = skipVarint(b, pos);
      break;
    case WIRE.i64:
      end = pos + 8;
      break;
    case WIRE.i32:
      end = pos + 4;
      break;
    case WIRE.len: {
      const [length, after] = readSmallVarint(b, pos, 'a length');
      lenStart(after);
      end = after + length;
      break;
    }
    case WIRE.sgroup:
      end = skipGroup(b, number, pos, to);
      break;
    case WIRE.egroup:
      return pos;
    default:
      throw malformed(`wire type ${wireType} does not exist`);
  }
  if (end > to) throw malformed('a field runs past the end of its message');
  return end;
}

function skipGroup(b: Uint8Array, number: number, pos: number, to: number): number {
  while (pos < to) {
    const [tag, afterTag] = readSmallVarint(b, pos, 'a tag');
    if ((tag & 7) === WIRE.egroup) {
      if (tag >>> 3 !== number) throw malformed('a group ends with another field number');
      return afterTag;
    }
    pos = skipValue(b, tag & 7, tag >>> 3, afterTag, to, () => {});
  }
  throw malformed('a group has no end tag');
}

/** the old reader: every field through skipValue */
export function* refFields(b: Uint8Array, from: number, to: number): Generator<WireField> {
  let pos = from;
  while (pos < to) {
    const start = pos;
    const [tag, afterTag] = b[pos]! < 0x80 ? [b[pos]!, pos + 1] : readSmallVarint(b, pos, 'a tag');
    const number = tag >>> 3;
    const wireType = tag & 7;
    if (number === 0) throw malformed('a field number is 0');
    let valueStart = afterTag;
    let end: number;
    if (wireType === WIRE.len && afterTag < to && b[afterTag]! < 0x80) {
      valueStart = afterTag + 1;
      end = valueStart + b[afterTag]!;
      if (end > to) throw malformed('a field runs past the end of its message');
    } else {
      end = skipValue(b, wireType, number, afterTag, to, (s) => {
        valueStart = s;
      });
      if (wireType === WIRE.egroup) throw malformed('an end-group tag has no start');
    }
    yield { number, wireType, start, valueStart, end };
    pos = end;
  }
}

function lenHeader(number: number, length: number): Buffer {
  const out: number[] = [];
  for (let v = ((number << 3) | WIRE.len) >>> 0; ; v = Math.floor(v / 128)) {
    if (v < 0x80) {
      out.push(v);
      break;
    }
    out.push((v & 0x7f) | 0x80);
  }
  for (let v = length; ; v = Math.floor(v / 128)) {
    if (v < 0x80) {
      out.push(v);
      break;
    }
    out.push((v & 0x7f) | 0x80);
  }
  return Buffer.from(out);
}

/** the old protectMessage: a Buffer per part, concatenated per level */
export function refProtectMessage(b: Buffer, from: number, to: number, plan: PlanNode, ctx: ProtectContext): Buffer {
  const out: Buffer[] = [];
  const seen = new Set<number>();
  let copied = from;
  for (const f of refFields(b, from, to)) {
    const entry = plan.fields.get(f.number);
    if (!entry) continue;
    seen.add(f.number);
    if (!ctx.dryRun) out.push(b.subarray(copied, f.start));
    copied = f.end;
    if (entry.child) {
      if (f.wireType !== WIRE.len) throw new StreamError('RECORD_MALFORMED', `field ${entry.field.name} is not encoded as a message`);
      const body = refProtectMessage(b, f.valueStart, f.end, entry.child, ctx);
      if (!ctx.dryRun) out.push(lenHeader(f.number, body.length), body);
      continue;
    }
    for (const text of refTexts(b, f, entry.field, ctx.schema)) {
      const protectedText = ctx.protect(entry.path!, text);
      if (ctx.dryRun) continue;
      const bytes = Buffer.from(protectedText, 'utf8');
      out.push(lenHeader(f.number, bytes.length), bytes);
    }
  }
  if (!ctx.dryRun) out.push(b.subarray(copied, to));
  if (ctx.missing === 'dead-letter') {
    for (const [number, entry] of plan.fields) {
      if (seen.has(number) || entry.field.repeated) continue;
      throw new StreamError('FIELD_MISSING', `mapped field ${entry.path ?? entry.child!.leafPaths[0]!} is absent`);
    }
  }
  return ctx.dryRun ? Buffer.alloc(0) : Buffer.concat(out);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** strings through the validating decoder, whatever their bytes; other kinds as scalarTexts reads them */
function refTexts(b: Buffer, f: WireField, field: ProtoField, schema: ProtoSchema): string[] {
  if (field.kind !== 'string') return scalarTexts(b, f, field, schema);
  if (f.wireType !== WIRE.len) throw new StreamError('RECORD_MALFORMED', `field ${field.name} is not encoded as a string`);
  try {
    return [utf8.decode(b.subarray(f.valueStart, f.end))];
  } catch {
    throw new StreamError('RECORD_MALFORMED', `field ${field.name} is not valid UTF-8`);
  }
}

const INTEGERS = new Set(['int32', 'int64', 'uint32', 'uint64', 'sint32', 'sint64', 'fixed32', 'fixed64', 'sfixed32', 'sfixed64']);
interface Walk {
  b: Buffer;
  schema: ProtoSchema;
  guard: ObjectGuard;
  steps: PlaceStep[];
}
type Finding = { path: string; kind: string } | undefined;
const bad = (field: ProtoField): never => {
  throw new StreamError('RECORD_MALFORMED', `field ${field.name} is not encoded as its schema says`);
};

/** the old guard walk: the path tree, allowed paths and names asked at every field of every record */
export function refProtoFinding(b: Buffer, from: number, to: number, message: ProtoMessage, schema: ProtoSchema, guard: ObjectGuard): Finding {
  return refWalk({ b, schema, guard, steps: [] }, from, to, message, guard.root());
}

function refWalk(w: Walk, from: number, to: number, message: ProtoMessage, tree: PathTree | undefined, isEntry = false): Finding {
  const fields = new Map(message.fields.map((f) => [f.number, f]));
  // a map entry's value is named by its key
  let keyContext = 0;
  if (isEntry) {
    for (const f of refFields(w.b, from, to)) {
      if (f.number !== 1) continue;
      keyContext = f.wireType === WIRE.len && f.end - f.valueStart <= 64 ? contextOf(w.b.toString('utf8', f.valueStart, f.end)) : 0;
      break;
    }
  }
  for (const f of refFields(w.b, from, to)) {
    const field = fields.get(f.number);
    if (field === undefined) {
      const base = formatPath(w.steps);
      const found = refUnknown(w, f, `${base === '' ? '' : `${base}.`}#${f.number}`, 0);
      if (found !== undefined) return found;
      continue;
    }
    const entry = field.kind === 'map' && field.typeName !== undefined ? w.schema.messages.get(field.typeName) : undefined;
    const nested = field.kind === 'message' ? w.schema.messages.get(field.typeName!) : entry;
    if (nested === undefined && field.kind !== 'string' && field.kind !== 'bytes' && !INTEGERS.has(field.kind)) continue;
    w.steps.push(field.name);
    let place = w.guard.child(tree, field.name);
    if (field.repeated || entry !== undefined) {
      w.steps.push(null);
      place = w.guard.element(place);
    }
    const hints = isEntry ? (f.number === 2 ? keyContext : 0) : contextOf(field.name) || parentContext(w.steps);
    const found =
      w.guard.isMapped(place) || w.guard.allowed(w.steps)
        ? undefined
        : nested !== undefined
          ? f.wireType === WIRE.len
            ? refWalk(w, f.valueStart, f.end, nested, place, entry !== undefined)
            : bad(field)
          : field.kind === 'string' || field.kind === 'bytes'
            ? refString(w, f, field, hints)
            : refInteger(w, f, field, hints);
    if (field.repeated || entry !== undefined) w.steps.pop();
    w.steps.pop();
    if (found !== undefined) return found;
  }
  return undefined;
}

/** a field the schema does not declare: text if UTF-8, then a message of such fields (8 deep); integers as digits */
function refUnknown(w: Walk, f: WireField, path: string, nesting: number): Finding {
  const check = (text: string): Finding => {
    const kind = unmappedValueKind(text, '', 0, w.guard.threshold);
    return kind === undefined ? undefined : { path, kind };
  };
  if (f.wireType === WIRE.varint) return check(String(readVarint(w.b, f.valueStart)[0]));
  if (f.wireType === WIRE.i64) return check(String(w.b.readBigUInt64LE(f.valueStart)));
  if (f.wireType !== WIRE.len) return undefined;
  const bytes = w.b.subarray(f.valueStart, f.end);
  const asText = bytes.length >= 5 && bytes.length <= 254 && isUtf8(bytes) ? check(w.b.toString('utf8', f.valueStart, f.end)) : undefined;
  if (asText !== undefined || nesting >= 8) return asText;
  try {
    for (const inner of refFields(w.b, f.valueStart, f.end)) {
      const found = refUnknown(w, inner, path, nesting + 1);
      if (found !== undefined) return found;
    }
  } catch {
    // not a message
  }
  return undefined;
}

function refString(w: Walk, f: WireField, field: ProtoField, hints: number): Finding {
  if (f.wireType !== WIRE.len) return bad(field);
  const n = f.end - f.valueStart;
  if (n < 5 || n > 254) return undefined;
  if (!mayBePersonal(shapeOfBytes(w.b, f.valueStart, f.end), hints)) return undefined;
  if (field.kind === 'bytes' && !isUtf8(w.b.subarray(f.valueStart, f.end))) return undefined;
  const kind = unmappedValueKind(w.b.toString('utf8', f.valueStart, f.end), field.name, hints, w.guard.threshold);
  return kind === undefined ? undefined : { path: formatPath(w.steps), kind };
}

function refInteger(w: Walk, f: WireField, field: ProtoField, hints: number): Finding {
  const one = (text: string): Finding => {
    const kind = mayBePersonal(shapeOf(text), hints) ? unmappedValueKind(text, field.name, hints, w.guard.threshold) : undefined;
    return kind === undefined ? undefined : { path: formatPath(w.steps), kind };
  };
  const { b } = w;
  if (f.wireType === WIRE.varint) return one(intText(b, f.valueStart, field));
  if (f.wireType === WIRE.i64) return one(field.kind === 'sfixed64' ? String(b.readBigInt64LE(f.valueStart)) : String(b.readBigUInt64LE(f.valueStart)));
  if (f.wireType === WIRE.i32) return one(field.kind === 'sfixed32' ? String(b.readInt32LE(f.valueStart)) : String(b.readUInt32LE(f.valueStart)));
  if (f.wireType !== WIRE.len) return bad(field);
  const width = field.kind.includes('fixed64') ? 8 : field.kind.includes('fixed32') ? 4 : 0;
  if (width > 0 && (f.end - f.valueStart) % width !== 0) return bad(field);
  for (let pos = f.valueStart; pos < f.end;) {
    let text: string;
    if (width === 8) text = field.kind === 'sfixed64' ? String(b.readBigInt64LE(pos)) : String(b.readBigUInt64LE(pos));
    else if (width === 4) text = field.kind === 'sfixed32' ? String(b.readInt32LE(pos)) : String(b.readUInt32LE(pos));
    else text = intText(b, pos, field);
    pos = width > 0 ? pos + width : readVarint(b, pos)[1];
    if (pos > f.end) return bad(field);
    const found = one(text);
    if (found !== undefined) return found;
  }
  return undefined;
}

function intText(b: Buffer, pos: number, field: ProtoField): string {
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
