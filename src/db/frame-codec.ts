import { isUtf8 } from 'node:buffer';
import { DbFault } from './errors.ts';

/** every frame starts with its payload's length, a u32 */
const HEADER_BYTES = 4;
/** a database role name is at most NAMEDATALEN - 1 bytes */
export const MAX_DB_ROLE_BYTES = 63;

/** A frame that breaks the grammar (DbFault FRAME_MALFORMED): the connection is answered with REQUEST_MALFORMED and closed. */
export function frameError(why: string): DbFault {
  return new DbFault('FRAME_MALFORMED', why);
}

/** Reads one payload; every read checks the bytes are there. */
export class Reader {
  private at = 0;
  private readonly buf: Buffer;

  constructor(buf: Buffer) {
    this.buf = buf;
  }

  private need(n: number, what: string): number {
    if (this.at + n > this.buf.length) throw frameError(`the frame ends inside ${what}`);
    const start = this.at;
    this.at += n;
    return start;
  }

  u8(what: string): number {
    return this.buf[this.need(1, what)]!;
  }

  u16(what: string): number {
    return this.buf.readUInt16BE(this.need(2, what));
  }

  u32(what: string): number {
    return this.buf.readUInt32BE(this.need(4, what));
  }

  /** a length of `lengthBytes` bytes, then that many bytes of strict UTF-8 */
  str(lengthBytes: 1 | 2 | 4, what: string, min = 0, max = Number.MAX_SAFE_INTEGER): string {
    const n = lengthBytes === 1 ? this.u8(what) : lengthBytes === 2 ? this.u16(what) : this.u32(what);
    if (n < min || n > max) throw frameError(`${what} has a length outside ${min}..${max}`);
    const start = this.need(n, what);
    const bytes = this.buf.subarray(start, start + n);
    if (!isUtf8(bytes)) throw frameError(`${what} is not UTF-8`);
    return bytes.toString('utf8');
  }

  /** a length of `lengthBytes` bytes, then that many raw bytes (a copy) */
  bytes(lengthBytes: 1 | 2, what: string, min = 0, max = Number.MAX_SAFE_INTEGER): Buffer {
    const n = lengthBytes === 1 ? this.u8(what) : this.u16(what);
    if (n < min || n > max) throw frameError(`${what} has a length outside ${min}..${max}`);
    const start = this.need(n, what);
    return Buffer.from(this.buf.subarray(start, start + n));
  }

  end(): void {
    if (this.at !== this.buf.length) throw frameError('the frame holds bytes after its last field');
  }

  get remaining(): number {
    return this.buf.length - this.at;
  }
}

/** Builds a frame: the u32 length, then the payload pieces. */
export function frame(parts: Buffer[]): Buffer {
  const length = parts.reduce((n, p) => n + p.length, 0);
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  header.writeUInt32BE(length, 0);
  return Buffer.concat([header, ...parts], HEADER_BYTES + length);
}

export const u8 = (n: number) => Buffer.from([n]);
export const u16 = (n: number) => {
  const b = Buffer.allocUnsafe(2);
  b.writeUInt16BE(n, 0);
  return b;
};
export const u32 = (n: number) => {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n, 0);
  return b;
};
/** a string cut to what its length field can say, at a character boundary */
export function str(bits: 8 | 16 | 32, s: string): Buffer[] {
  const max = bits === 8 ? 0xff : bits === 16 ? 0xffff : 0xffffffff;
  let bytes = Buffer.from(s, 'utf8');
  if (bytes.length > max)
    bytes = Buffer.from(
      bytes
        .subarray(0, max)
        .toString('utf8')
        .replace(/\uFFFD$/, ''),
      'utf8',
    );
  return [bits === 8 ? u8(bytes.length) : bits === 16 ? u16(bytes.length) : u32(bytes.length), bytes];
}
