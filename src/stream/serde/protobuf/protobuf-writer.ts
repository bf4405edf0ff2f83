import { WIRE } from './protobuf-wire.ts';

// the writer's operations, flat in one array: [COPY, from, to], [LEN, tag, length], [TEXT, text, byteLength]
const COPY = 0;
const LEN = 1;
const TEXT = 2;

/**
 * A protected message written once: the walk records what goes out — ranges of the source bytes
 * kept as they are, LEN headers, protected texts — and `finish` writes them into one buffer of the
 * exact size, behind the record's header. No buffer per field or per nested message, and no
 * concatenation per level: the record's bytes are copied once.
 */
export class WireWriter {
  private readonly ops: (number | string)[] = [];
  private size = 0;
  private b: Buffer;

  /** `b`: the source bytes the copied ranges come from */
  constructor(b: Buffer) {
    this.b = b;
  }

  /** Empty again, for the next record `b` (a batch reuses one writer and its list's room). */
  reset(b: Buffer): this {
    this.b = b;
    this.ops.length = 0;
    this.size = 0;
    return this;
  }

  /** the source bytes `[from, to)` as they are */
  copy(from: number, to: number): void {
    if (to <= from) return;
    this.ops.push(COPY, from, to);
    this.size += to - from;
  }

  /** a LEN field `number` holding `text` (UTF-8) */
  text(number: number, text: string): void {
    const length = Buffer.byteLength(text, 'utf8');
    const tag = ((number << 3) | WIRE.len) >>> 0;
    this.ops.push(LEN, tag, length, TEXT, text, length);
    this.size += varintSize(tag) + varintSize(length) + length;
  }

  /** opens a LEN field `number` whose bytes follow until `close` (a walked-into message); returns its handle */
  open(number: number): number {
    const tag = ((number << 3) | WIRE.len) >>> 0;
    const at = this.ops.length;
    this.ops.push(LEN, tag, this.size);
    this.size += varintSize(tag);
    return at;
  }

  /** closes the field `open` returned `at` for: its length is what was written since */
  close(at: number): void {
    const length = this.size - (this.ops[at + 2] as number) - varintSize(this.ops[at + 1] as number);
    this.ops[at + 2] = length;
    this.size += varintSize(length);
  }

  /** `header` then everything written, in one buffer */
  finish(header: Buffer): Buffer {
    const out = Buffer.allocUnsafe(header.length + this.size);
    header.copy(out, 0);
    let pos = header.length;
    const { ops, b } = this;
    for (let i = 0; i < ops.length; i += 3) {
      const op = ops[i];
      if (op === COPY) pos += b.copy(out, pos, ops[i + 1] as number, ops[i + 2] as number);
      else if (op === LEN) pos = writeVarint(out, writeVarint(out, pos, ops[i + 1] as number), ops[i + 2] as number);
      else pos += out.write(ops[i + 1] as string, pos, ops[i + 2] as number, 'utf8');
    }
    if (pos !== out.length) throw new Error(`protobuf writer: wrote ${pos} bytes of ${out.length}`);
    return out;
  }
}

/** the bytes of a 32-bit unsigned varint */
function varintSize(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

function writeVarint(out: Buffer, pos: number, value: number): number {
  let v = value;
  while (v >= 0x80) {
    out[pos++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  out[pos++] = v;
  return pos;
}
