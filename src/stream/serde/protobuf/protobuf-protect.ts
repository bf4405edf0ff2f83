import { ValueError, type Chain } from '../../../engine/index.ts';
import { StreamError } from '../../stream-error.ts';
import type { PlanNode } from './protobuf-plan.ts';
import type { ProtoField, ProtoMessage, ProtoSchema } from './protobuf-schema.ts';
import { readVarint, WIRE, wireFields, WireReaders, type WireField } from './protobuf-wire.ts';
import { WireWriter } from './protobuf-writer.ts';

export interface ProtectContext {
  schema: ProtoSchema;
  /** a mapped value's protected text (throws a StreamError when it cannot be) */
  protect(path: string, text: string): string;
  missing: 'pass' | 'dead-letter';
  /** only walk (collect values, find failures): no output is built */
  dryRun?: boolean;
  /**
   * the record's values were read, and their encoding checked, by an earlier walk of the same
   * bytes (a batch's first walk): protect is called with '' in place of each text
   */
  textsRead?: boolean;
}

const EMPTY = Buffer.alloc(0);

/** ProtectContext.protect for one record: each value through its path's transform. */
export function protectEach(transforms: ReadonlyMap<string, Chain>): (path: string, text: string) => string {
  return (path, text) => {
    const transform = transforms.get(path);
    // the plan and the mappings come from the same pipeline: a gap is a bug, never a pass-through
    if (!transform) throw new Error(`protobuf serde: no transform for the mapped path ${path}`);
    return protectValue(transform, text, path);
  };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The message bytes `b[from, to)` with every planned field protected: a leaf's values become
 * LEN fields (strings) under the same field number, a walked-into message is rewritten with its
 * new length. Every other byte — unmapped and unknown fields, their order, their encoding — is
 * copied as it is. A packed repeated leaf becomes one string field per element (strings are never
 * packed). Absent means not on the wire (proto3: also a default value), and `missing:
 * dead-letter` turns an absent leaf of a present message into FIELD_MISSING.
 */
export function protectMessage(b: Buffer, from: number, to: number, plan: PlanNode, ctx: ProtectContext): Buffer {
  if (ctx.dryRun) {
    protectInto(b, from, to, plan, ctx, undefined);
    return EMPTY;
  }
  const w = new WireWriter(b);
  protectInto(b, from, to, plan, ctx, w);
  return w.finish(EMPTY);
}

/**
 * protectMessage's walk, written into `w` (the record's writer, so that the framed record is
 * built in one buffer); without a writer, a dry run: values are collected and failures found.
 */
export function protectInto(b: Buffer, from: number, to: number, plan: PlanNode, ctx: ProtectContext, w: WireWriter | undefined): void {
  try {
    walkInto(b, from, to, plan, ctx, w, 0);
  } finally {
    readers.release();
  }
}

/** the protect walk's readers, and its lists of the planned fields met: one per message level */
const readers = new WireReaders();
const seenAt: number[][] = [];

function walkInto(b: Buffer, from: number, to: number, plan: PlanNode, ctx: ProtectContext, w: WireWriter | undefined, depth: number): void {
  // the planned fields met, for `missing: dead-letter` only
  let seen: number[] | undefined;
  if (ctx.missing === 'dead-letter') (seen = seenAt[depth] ??= []).length = 0;
  const f = readers.at(depth, b, from, to);
  let copied = from;
  while (f.next()) {
    const entry = plan.fields.get(f.number);
    if (entry === undefined) continue;
    seen?.push(f.number);
    w?.copy(copied, f.start);
    copied = f.end;
    if (entry.child) {
      if (f.wireType !== WIRE.len) throw new StreamError('RECORD_MALFORMED', `field ${entry.field.name} is not encoded as a message`);
      const at = w?.open(f.number);
      walkInto(b, f.valueStart, f.end, entry.child, ctx, w, depth + 1);
      if (at !== undefined) w!.close(at);
      continue;
    }
    if (entry.field.kind === 'string') {
      // one value, no array: the common leaf
      const protectedText = ctx.protect(entry.path!, ctx.textsRead ? '' : stringText(b, f, entry.field));
      w?.text(f.number, protectedText);
      continue;
    }
    for (const text of scalarTexts(b, f, entry.field, ctx.schema)) {
      const protectedText = ctx.protect(entry.path!, text);
      w?.text(f.number, protectedText);
    }
  }
  w?.copy(copied, to);
  if (seen !== undefined) checkMissing(plan, seen);
}

function checkMissing(plan: PlanNode, seen: readonly number[]): void {
  for (const [number, entry] of plan.fields) {
    if (seen.includes(number) || entry.field.repeated) continue;
    throw missingField(entry.path ?? entry.child!.leafPaths[0]!);
  }
}

function missingField(path: string): StreamError {
  return new StreamError('FIELD_MISSING', `mapped field ${path} is absent`);
}

function protectValue(transform: Chain, text: string, path: string): string {
  try {
    return transform(text);
  } catch (e) {
    if (e instanceof ValueError) throw new StreamError(e.code, `mapped field ${path}: value ${e.message}`);
    throw e;
  }
}

const VARINT_KINDS = new Set(['int32', 'int64', 'uint32', 'uint64', 'sint32', 'sint64', 'bool', 'enum']);
const I64_KINDS = new Set(['fixed64', 'sfixed64', 'double']);

/** The text of a string field occurrence: RECORD_MALFORMED when it is not a LEN field of valid UTF-8. */
function stringText(b: Buffer, f: WireField, field: ProtoField): string {
  if (f.wireType !== WIRE.len) throw new StreamError('RECORD_MALFORMED', `field ${field.name} is not encoded as a ${field.kind}`);
  const { valueStart, end } = f;
  // ASCII (most values) reads as Latin-1 without the validating decoder; anything else is validated
  let k = valueStart;
  while (k < end && b[k]! < 0x80) k++;
  if (k === end) return b.toString('latin1', valueStart, end);
  try {
    return utf8.decode(b.subarray(valueStart, end));
  } catch {
    throw new StreamError('RECORD_MALFORMED', `field ${field.name} is not valid UTF-8`);
  }
}

/** The text of each value of a scalar field occurrence (several when it is packed). */
export function scalarTexts(b: Buffer, f: WireField, field: ProtoField, schema: ProtoSchema): string[] {
  const wrong = () => new StreamError('RECORD_MALFORMED', `field ${field.name} is not encoded as a ${field.kind}`);
  if (field.kind === 'string') return [stringText(b, f, field)];
  const wireType = VARINT_KINDS.has(field.kind) ? WIRE.varint : I64_KINDS.has(field.kind) ? WIRE.i64 : WIRE.i32;
  if (f.wireType === wireType) return [numberText(b, f.valueStart, field, schema)[0]];
  if (f.wireType !== WIRE.len || !field.repeated) throw wrong();
  const texts: string[] = [];
  for (let pos = f.valueStart; pos < f.end;) {
    const [text, next] = numberText(b, pos, field, schema);
    if (next > f.end) throw new StreamError('RECORD_MALFORMED', `field ${field.name}: a packed value runs past its field`);
    texts.push(text);
    pos = next;
  }
  return texts;
}

/** One numeric value at `pos` as text (enums by name when the schema knows the number). */
function numberText(b: Buffer, pos: number, field: ProtoField, schema: ProtoSchema): [string, number] {
  const need = (n: number) => {
    if (pos + n > b.length) throw new StreamError('RECORD_MALFORMED', `field ${field.name} is truncated`);
  };
  switch (field.kind) {
    case 'fixed32':
      need(4);
      return [String(b.readUInt32LE(pos)), pos + 4];
    case 'sfixed32':
      need(4);
      return [String(b.readInt32LE(pos)), pos + 4];
    case 'float':
      need(4);
      return [String(b.readFloatLE(pos)), pos + 4];
    case 'fixed64':
      need(8);
      return [String(b.readBigUInt64LE(pos)), pos + 8];
    case 'sfixed64':
      need(8);
      return [String(b.readBigInt64LE(pos)), pos + 8];
    case 'double':
      need(8);
      return [String(b.readDoubleLE(pos)), pos + 8];
    default:
      break;
  }
  const [v, next] = readVarint(b, pos);
  switch (field.kind) {
    case 'int32':
      return [String(BigInt.asIntN(32, v)), next];
    case 'int64':
      return [String(BigInt.asIntN(64, v)), next];
    case 'uint32':
      return [String(BigInt.asUintN(32, v)), next];
    case 'sint32':
    case 'sint64':
      return [String((v >> 1n) ^ -(v & 1n)), next];
    case 'bool':
      return [v === 0n ? 'false' : 'true', next];
    case 'enum': {
      const n = Number(BigInt.asIntN(32, v));
      return [schema.enums.get(field.typeName!)?.get(n) ?? String(n), next];
    }
    default:
      return [String(v), next];
  }
}

/**
 * The message as a plain object by field name, as veil would see it: scalars and enums as the text
 * it would protect, nested messages as objects, repeated fields as arrays. Unknown fields and
 * bytes and imported-type fields are left out; so are maps, unless `maps` (the unmapped guard):
 * then a map is the array of its entries, each `{key, value}`. For discovery, which looks at
 * values, and the unmapped guard.
 */
export function decodeMessage(
  b: Buffer,
  from: number,
  to: number,
  message: ProtoMessage,
  schema: ProtoSchema,
  options: { maps?: boolean } = {},
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const byNumber = new Map(message.fields.map((f) => [f.number, f]));
  for (const f of wireFields(b, from, to)) {
    const field = byNumber.get(f.number);
    if (!field) continue;
    const entry = field.kind === 'map' && options.maps === true && field.typeName !== undefined ? schema.messages.get(field.typeName) : undefined;
    if (SKIPPED.has(field.kind) && entry === undefined) continue;
    let values: unknown[];
    if (field.kind === 'message' || entry !== undefined) {
      if (f.wireType !== WIRE.len) throw new StreamError('RECORD_MALFORMED', `field ${field.name} is not encoded as a message`);
      values = [decodeMessage(b, f.valueStart, f.end, entry ?? schema.messages.get(field.typeName!)!, schema, options)];
    } else values = scalarTexts(b, f, field, schema);
    if (field.repeated || entry !== undefined) ((out[field.name] ??= []) as unknown[]).push(...values);
    else out[field.name] = values.at(-1);
  }
  return out;
}

const SKIPPED = new Set(['bytes', 'map', 'group', 'external']);
