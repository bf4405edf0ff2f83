import { createCipheriv, type Cipher } from 'node:crypto';
import { unsafe } from '@noble/ciphers/aes.js';

// noble's word-level AES reads 32-bit words in little-endian lane order, the native order of
// every platform Node ships on; refuse to run rather than silently compute wrong blocks.
if (new Uint8Array(new Uint32Array([1]).buffer)[0] !== 1) {
  throw new Error('veil crypto needs a little-endian platform');
}

/** A 32-bit word's bytes reversed (as int32): between noble's little-endian lanes and big-endian fields. */
export function bswap32(x: number): number {
  return ((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24);
}

/**
 * One AES key with its expanded schedule, encrypting single blocks in place. Built on
 * @noble/ciphers' audited round function (`unsafe.encrypt`), which is several times faster per
 * block than a node:crypto ECB call because no native boundary is crossed. Only the forward
 * cipher is needed: FF1, FF3-1, CMAC and CTR all use AES in the encrypt direction.
 */
export class AesBlock {
  private readonly xk: Uint32Array;

  constructor(key: Uint8Array) {
    if (key.length !== 16 && key.length !== 24 && key.length !== 32) {
      throw new RangeError(`AES key must be 16, 24 or 32 bytes, got ${key.length}`);
    }
    this.xk = unsafe.expandKeyLE(Uint8Array.from(key));
  }

  /** Encrypts one block given and returned as four little-endian words (no buffer traffic). */
  encryptState(s0: number, s1: number, s2: number, s3: number): { s0: number; s1: number; s2: number; s3: number } {
    return unsafe.encrypt(this.xk, s0, s1, s2, s3);
  }

  /** Encrypts the 16-byte block held by `w` (a 4-word view of it) in place. */
  encryptWords(w: Uint32Array): void {
    const r = unsafe.encrypt(this.xk, w[0]!, w[1]!, w[2]!, w[3]!);
    w[0] = r.s0;
    w[1] = r.s1;
    w[2] = r.s2;
    w[3] = r.s3;
  }
}

/** A 16-byte block with a word view over the same memory, for AesBlock.encryptWords. */
export class Block {
  readonly bytes = new Uint8Array(16);
  readonly words = new Uint32Array(this.bytes.buffer);

  set(from: Block): this {
    this.words.set(from.words);
    return this;
  }

  xorWords(other: Block): this {
    const a = this.words;
    const b = other.words;
    a[0]! ^= b[0]!;
    a[1]! ^= b[1]!;
    a[2]! ^= b[2]!;
    a[3]! ^= b[3]!;
    return this;
  }

  /** Multiplication by x in GF(2^128), RFC 5297 dbl(): shift left one bit, reduce with 0x87. */
  dbl(): this {
    const b = this.bytes;
    const carry = b[0]! >>> 7;
    for (let i = 0; i < 15; i++) b[i] = ((b[i]! << 1) | (b[i + 1]! >>> 7)) & 0xff;
    b[15] = ((b[15]! << 1) & 0xff) ^ (0x87 & -carry);
    return this;
  }
}

/**
 * AES-ECB of node:crypto (AES-NI) for many independent blocks at once: one call costs about a
 * microsecond, then a few nanoseconds a block, so it pays for batches (FF1 rounds, CTR and GCM
 * counter blocks of many values) where one JS block (AesBlock) costs a few hundred nanoseconds.
 */
export class AesEcb {
  private cipher: Cipher | undefined;
  /**
   * The key until the first batch: the native cipher (an OpenSSL context off the JS heap, and
   * several microseconds to make) is made only for a key that runs batches. A data subject's key
   * protects value by value, and a process may hold a primitive for each of 100,000 subjects.
   */
  private key: Uint8Array | undefined;

  constructor(key: Uint8Array) {
    if (key.length !== 16 && key.length !== 24 && key.length !== 32) throw new RangeError(`AES key must be 16, 24 or 32 bytes, got ${key.length}`);
    this.key = Uint8Array.from(key);
  }

  /** E(block) for every 16-byte block of `blocks`, as a new buffer of the same length. */
  encryptBlocks(blocks: Uint8Array): Buffer {
    if (blocks.length % 16 !== 0) throw new RangeError('AES-ECB takes whole blocks');
    const out = (this.cipher ??= this.open()).update(blocks);
    if (out.length !== blocks.length) throw new Error('AES-ECB returned a partial batch');
    return out;
  }

  private open(): Cipher {
    const key = this.key!;
    const cipher = createCipheriv(`aes-${key.length * 8}-ecb`, key, null).setAutoPadding(false);
    key.fill(0);
    this.key = undefined;
    return cipher;
  }
}
