import { StreamError } from '../../stream-error.ts';

/** Protobuf wire types (encoding.md): VARINT, I64, LEN, SGROUP, EGROUP, I32. */
export const WIRE = { varint: 0, i64: 1, len: 2, sgroup: 3, egroup: 4, i32: 5 } as const;

/** One field occurrence in a message's bytes: `start` at its tag, `end` after its value. */
export interface WireField {
  number: number;
  wireType: number;
  start: number;
  /** where the value starts (after the tag, and after the length for LEN) */
  valueStart: number;
  end: number;
}

function malformed(what: string): StreamError {
  return new StreamError('RECORD_MALFORMED', `the Protobuf value is malformed: ${what}`);
}

/** A varint at `pos` of at most 10 bytes, as a bigint, and the position after it. */
export function readVarint(b: Uint8Array, pos: number): [bigint, number] {
  let result = 0n;
  for (let shift = 0n, i = 0; i < 10; i++, shift += 7n) {
    if (pos >= b.length) throw malformed('a varint runs past the end');
    const byte = b[pos++]!;
    result |= BigInt(byte & 0x7f) << shift;
    if (byte < 0x80) return [BigInt.asUintN(64, result), pos];
  }
  throw malformed('a varint is longer than 10 bytes');
}

/** A varint that must fit in 32 bits unsigned (tags, lengths, counts); no bigint on this hot path. */
export function readSmallVarint(b: Uint8Array, pos: number, what: string): [number, number] {
  let result = 0;
  for (let i = 0; i < 5; i++) {
    if (pos >= b.length) throw malformed(`${what} runs past the end`);
    const byte = b[pos++]!;
    result += (byte & 0x7f) * 2 ** (7 * i);
    if (byte < 0x80) {
      if (result > 0xffffffff) throw malformed(`${what} is out of range`);
      return [result, pos];
    }
  }
  const [v, next] = readVarint(b, pos - 5);
  if (v > 0xffffffffn) throw malformed(`${what} is out of range`);
  return [Number(v), next];
}

/** The position after the varint at `pos`. */
function skipVarint(b: Uint8Array, pos: number): number {
  for (let i = 0; i < 10; i++) {
    if (pos >= b.length) throw malformed('a varint runs past the end');
    if (b[pos++]! < 0x80) return pos;
  }
  throw malformed('a varint is longer than 10 bytes');
}

export function varint(value: bigint | number): Buffer {
  if (typeof value === 'number' && value >= 0 && value <= 0xffffffff) return Buffer.from(smallVarint(value));
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return Buffer.from(out);
}

/** A 32-bit unsigned varint's bytes, without bigint (tags and lengths, on the hot path). */
function smallVarint(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

/** The tag and length of a LEN field `number` holding `length` bytes. */
export function lenHeader(number: number, length: number): Buffer {
  return Buffer.from([...smallVarint(((number << 3) | WIRE.len) >>> 0), ...smallVarint(length)]);
}

/**
 * The fields of a message's bytes in order, each with its exact extent, so that a field kept as it
 * is can be copied byte for byte. Groups (deprecated, proto2) are skipped whole, to their matching
 * end tag. Anything that does not frame — a truncated value, a length past the end, wire type 6 or
 * 7, an unmatched end-group tag, field number 0 — is RECORD_MALFORMED.
 */
export function* wireFields(b: Uint8Array, from = 0, to = b.length): Generator<WireField> {
  const reader = new WireReader(b, from, to);
  while (reader.next()) yield { number: reader.number, wireType: reader.wireType, start: reader.start, valueStart: reader.valueStart, end: reader.end };
}

/**
 * wireFields without an object per field: `next()` moves to the following field and sets its
 * extent on the reader itself (a hot walk over every field of every record: the unmapped guard).
 * The same framing rules and errors.
 */
export class WireReader implements WireField {
  number = 0;
  wireType = 0;
  start = 0;
  valueStart = 0;
  end = 0;
  private b: Uint8Array;
  private to: number;

  constructor(b: Uint8Array, from: number, to: number) {
    this.b = b;
    this.to = to;
    this.end = from;
  }

  /** Reads `b[from, to)` from its first field on (WireReaders). */
  reset(b: Uint8Array, from: number, to: number): this {
    this.b = b;
    this.to = to;
    this.end = from;
    return this;
  }

  next(): boolean {
    const { b, to } = this;
    const pos = this.end;
    if (pos >= to) return false;
    this.start = pos;
    let tag: number;
    let afterTag: number;
    // one-byte tags (fields 1-15) are the common case: no tuple
    if (b[pos]! < 0x80) {
      tag = b[pos]!;
      afterTag = pos + 1;
    } else [tag, afterTag] = readSmallVarint(b, pos, 'a tag');
    this.number = tag >>> 3;
    this.wireType = tag & 7;
    if (this.number === 0) throw malformed('a field number is 0');
    if (this.wireType === WIRE.len && afterTag < to && b[afterTag]! < 0x80) {
      this.valueStart = afterTag + 1;
      this.end = this.valueStart + b[afterTag]!;
      if (this.end > to) throw malformed('a field runs past the end of its message');
      return true;
    }
    this.valueStart = afterTag;
    // the common wire types inline (no callback, no tuple); groups and the rest through skipValue
    const wireType = this.wireType;
    let end: number;
    if (wireType === WIRE.varint) end = skipVarint(b, afterTag);
    else if (wireType === WIRE.i64) end = afterTag + 8;
    else if (wireType === WIRE.i32) end = afterTag + 4;
    else if (wireType === WIRE.len) end = this.lenEnd(afterTag);
    else {
      this.end = skipValue(b, wireType, this.number, afterTag, to, NO_START);
      if (wireType === WIRE.egroup) throw malformed('an end-group tag has no start');
      return true;
    }
    if (end > to) throw malformed('a field runs past the end of its message');
    this.end = end;
    return true;
  }

  /** a LEN field's value start (set) and end, its length at `pos` */
  private lenEnd(pos: number): number {
    const b = this.b;
    // two-byte lengths (128 to 16,383 bytes) without a tuple
    if (pos + 1 < this.to && b[pos]! >= 0x80 && b[pos + 1]! < 0x80) {
      this.valueStart = pos + 2;
      return pos + 2 + ((b[pos]! & 0x7f) | (b[pos + 1]! << 7));
    }
    const [length, after] = readSmallVarint(b, pos, 'a length');
    this.valueStart = after;
    return after + length;
  }
}

/**
 * WireReaders by nesting depth, reused from record to record: a synchronous walk needs one per
 * message level it is inside, and a reader a level costs an object per nested message of every
 * record (the Order of each line of an order, say) — twice per record, and again for the guard.
 * Each walker keeps its own (a walk never runs inside another walker's), and releases them when
 * its walk ends: an idle pipeline's readers would otherwise keep its last record's bytes alive.
 */
export class WireReaders {
  private readonly readers: WireReader[] = [];

  at(depth: number, b: Uint8Array, from: number, to: number): WireReader {
    const reader = this.readers[depth];
    if (reader === undefined) return (this.readers[depth] = new WireReader(b, from, to));
    return reader.reset(b, from, to);
  }

  /** Lets go of the bytes the readers were given. */
  release(): void {
    for (const reader of this.readers) reader.reset(NO_BYTES, 0, 0);
  }
}

const NO_BYTES = new Uint8Array(0);

const NO_START = (): void => {};

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

/**
 * The Confluent Protobuf framing: magic byte 0, the schema id (4 bytes, big-endian), then the
 * message-index list (zigzag varints: a count, then that many indexes; a lone 0 means [0], the
 * first message) locating the record's message type in the schema, then the message.
 */
export function readFraming(b: Buffer): { schemaId: number; indexes: number[]; bodyStart: number } {
  if (b.length < 6)
    throw new StreamError('RECORD_MALFORMED', 'the value is shorter than the Protobuf wire-format header (magic byte, schema id, message indexes)');
  if (b[0] !== 0) throw new StreamError('RECORD_MALFORMED', 'the value does not start with the wire-format magic byte 0');
  const schemaId = b.readUInt32BE(1);
  let [count, pos] = readSmallVarint(b, 5, 'the message-index count');
  count = zigzag(count);
  if (count < 0 || count > 100) throw new StreamError('RECORD_MALFORMED', 'the message-index count is out of range');
  if (count === 0) return { schemaId, indexes: [0], bodyStart: pos };
  const indexes: number[] = [];
  for (let i = 0; i < count; i++) {
    const [raw, next] = readSmallVarint(b, pos, 'a message index');
    indexes.push(zigzag(raw));
    pos = next;
  }
  if (indexes.some((x) => x < 0)) throw new StreamError('RECORD_MALFORMED', 'a message index is negative');
  return { schemaId, indexes, bodyStart: pos };
}

function zigzag(n: number): number {
  return (n >>> 1) ^ -(n & 1);
}
