import { timingSafeEqual } from 'node:crypto';
import { AesBlock, AesEcb, bswap32 as bswap } from './aes-block.ts';

export const GCM_NONCE_BYTES = 12;
export const GCM_TAG_BYTES = 16;

/** GHASH state after an associated-data string (zero-padded to a block), for seals that repeat it. */
export interface GcmAad {
  readonly bytes: number;
  readonly y: readonly [number, number, number, number];
}

/** One seal of a batch: the plaintext at out[offset, +length) is encrypted in place, its tag written after it. */
export interface GcmSeal {
  nonce: Uint8Array;
  aad: GcmAad;
  out: Uint8Array;
  offset: number;
  length: number;
}

/**
 * GHASH reduction for the 4-bit table method (Shoup; OpenSSL's rem_4bit): the bits shifted out
 * of a 4-bit right shift, folded back by the GCM polynomial, as they land in the top word.
 */
const REM_4BIT = Uint32Array.from(
  [0x0000, 0x1c20, 0x3840, 0x2460, 0x7080, 0x6ca0, 0x48c0, 0x54e0, 0xe100, 0xfd20, 0xd940, 0xc560, 0x9180, 0x8da0, 0xa9c0, 0xb5e0],
  (x) => (x << 16) >>> 0,
);

const aadBytes = (aad: Uint8Array | GcmAad) => (aad instanceof Uint8Array ? aad.length : aad.bytes);
const be32 = (b: Uint8Array, o: number) => ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) >>> 0;
const le32 = (b: Uint8Array, o: number) => (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;

/**
 * AES-GCM (NIST SP 800-38D) with a 96-bit nonce and a 128-bit tag, for one key: CTR on
 * @noble/ciphers' AES round function (AesBlock), GHASH with a per-key 4-bit table.
 *
 * Why not node:crypto: a Cipheriv per value (it cannot take a new nonce) cost ~4–10 µs, most of
 * a short value's protection, where this costs one key schedule and one table per key and then
 * about 2 blocks' work per short value. Checked against the McGrew–Viega and Wycheproof vectors
 * and, value for value, against node:crypto (test/engine/crypto). Like noble's GHASH, the
 * table lookups depend on the hash key H; JavaScript offers no constant-time guarantee anyway.
 */
export class AesGcm {
  private readonly aes: AesBlock;
  private readonly ecb: AesEcb;
  /** i·H for every 4-bit i, 4 big-endian words each */
  private readonly table = new Uint32Array(64);
  /** the GHASH state Y, 4 big-endian words */
  private y0 = 0;
  private y1 = 0;
  private y2 = 0;
  private y3 = 0;
  private readonly ks = new Uint32Array(4);
  private readonly ksBytes = new Uint8Array(this.ks.buffer);

  constructor(key: Uint8Array) {
    if (key.length !== 16 && key.length !== 24 && key.length !== 32) throw new RangeError('AES-GCM key must be 16, 24 or 32 bytes');
    this.aes = new AesBlock(key);
    this.ecb = new AesEcb(key);
    const h = this.aes.encryptState(0, 0, 0, 0);
    this.initTable(bswap(h.s0), bswap(h.s1), bswap(h.s2), bswap(h.s3));
  }

  /** Returns C || tag. */
  seal(nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array {
    const out = new Uint8Array(plaintext.length + GCM_TAG_BYTES);
    out.set(plaintext);
    return this.sealInPlace(nonce, aad, out, 0, plaintext.length);
  }

  /**
   * The plaintext sits at out[offset, offset + length): encrypts it in place and writes the tag
   * right after it (out must have room). Returns out. `aad`: the associated data, or its GHASH
   * state prepared by this key (prepareAad), which skips absorbing it again.
   */
  sealInPlace<T extends Uint8Array>(nonce: Uint8Array, aad: Uint8Array | GcmAad, out: T, offset: number, length: number): T {
    checkNonce(nonce);
    checkLengths(aadBytes(aad), length);
    const n = nonceWords(nonce);
    this.ctr(n, out, offset, out, offset, length);
    this.tag(n, aad, out, offset, length, out, offset + length);
    return out;
  }

  /** The GHASH state after `aad`, so that seals with the same associated data skip absorbing it. */
  prepareAad(aad: Uint8Array): GcmAad {
    checkLengths(aad.length, 0);
    this.y0 = this.y1 = this.y2 = this.y3 = 0;
    this.absorb(aad, 0, aad.length);
    return { bytes: aad.length, y: [this.y0, this.y1, this.y2, this.y3] };
  }

  /**
   * sealInPlace for many values: the counter blocks of all of them (J0 and the CTR blocks) are
   * encrypted in one node:crypto call; GHASH runs per value from its prepared associated data.
   */
  sealMany(items: readonly GcmSeal[]): void {
    let blocks = 0;
    for (const it of items) {
      checkNonce(it.nonce);
      checkLengths(it.aad.bytes, it.length);
      blocks += 1 + Math.ceil(it.length / 16);
    }
    // per value: J0 = nonce || 1 (masks the tag), then nonce || 2, 3, … (the keystream)
    const counters = new Uint8Array(16 * blocks);
    let at = 0;
    for (const it of items) {
      for (let c = 1, last = 1 + Math.ceil(it.length / 16); c <= last; c++, at += 16) {
        counters.set(it.nonce, at);
        counters[at + 12] = c >>> 24;
        counters[at + 13] = (c >>> 16) & 0xff;
        counters[at + 14] = (c >>> 8) & 0xff;
        counters[at + 15] = c & 0xff;
      }
    }
    const ks = this.ecb.encryptBlocks(counters);
    at = 0;
    for (const it of items) {
      const mask = at;
      at += 16;
      const { out, offset, length } = it;
      for (let i = 0; i < length; i++) out[offset + i]! ^= ks[at + i]!;
      at += 16 * Math.ceil(length / 16);
      this.ghash(it.aad, out, offset, length);
      const tagAt = offset + length;
      for (let w = 0; w < 4; w++) {
        const y = w === 0 ? this.y0 : w === 1 ? this.y1 : w === 2 ? this.y2 : this.y3;
        out[tagAt + 4 * w] = (y >>> 24) ^ ks[mask + 4 * w]!;
        out[tagAt + 4 * w + 1] = ((y >>> 16) & 0xff) ^ ks[mask + 4 * w + 1]!;
        out[tagAt + 4 * w + 2] = ((y >>> 8) & 0xff) ^ ks[mask + 4 * w + 2]!;
        out[tagAt + 4 * w + 3] = (y & 0xff) ^ ks[mask + 4 * w + 3]!;
      }
    }
  }

  /** open() of each nonce || C || tag, one at a time. */
  openMany(aad: GcmAad, sealed: readonly Uint8Array[]): (Uint8Array | undefined)[] {
    return sealed.map((s) => (s.length < GCM_NONCE_BYTES ? undefined : this.open(s.subarray(0, GCM_NONCE_BYTES), aad, s.subarray(GCM_NONCE_BYTES))));
  }

  /** Opens C || tag; undefined when authentication fails. `aad` as for sealInPlace. */
  open(nonce: Uint8Array, aad: Uint8Array | GcmAad, sealed: Uint8Array): Uint8Array | undefined {
    checkNonce(nonce);
    checkLengths(aadBytes(aad), sealed.length);
    if (sealed.length < GCM_TAG_BYTES) return undefined;
    const length = sealed.length - GCM_TAG_BYTES;
    const n = nonceWords(nonce);
    const expected = new Uint8Array(GCM_TAG_BYTES);
    this.tag(n, aad, sealed, 0, length, expected, 0);
    if (!timingSafeEqual(expected, sealed.subarray(length))) return undefined;
    const plaintext = new Uint8Array(length);
    this.ctr(n, sealed, 0, plaintext, 0, length);
    return plaintext;
  }

  /** GCTR from inc32(J0) over input[inAt, +length) into output[outAt, …): counter blocks nonce || 2, 3, … (J0 = nonce || 1 masks the tag). */
  private ctr(n: NonceWords, input: Uint8Array, inAt: number, output: Uint8Array, outAt: number, length: number): void {
    const [n0, n1, n2] = n;
    const ks = this.ks;
    const bytes = this.ksBytes;
    for (let off = 0, counter = 2; off < length; off += 16, counter++) {
      const r = this.aes.encryptState(n0, n1, n2, bswap(counter));
      ks[0] = r.s0;
      ks[1] = r.s1;
      ks[2] = r.s2;
      ks[3] = r.s3;
      const end = Math.min(16, length - off);
      for (let i = 0; i < end; i++) output[outAt + off + i] = input[inAt + off + i]! ^ bytes[i]!;
    }
  }

  /** tag = E(J0) xor GHASH(A || pad || C || pad || len(A) || len(C)), C = c[cAt, +length), written at out[at]. */
  private tag(n: NonceWords, aad: Uint8Array | GcmAad, c: Uint8Array, cAt: number, length: number, out: Uint8Array, at: number): void {
    if (aad instanceof Uint8Array) {
      this.y0 = this.y1 = this.y2 = this.y3 = 0;
      this.absorb(aad, 0, aad.length);
      this.finishGhash(aad.length, c, cAt, length);
    } else this.ghash(aad, c, cAt, length);
    const m = this.aes.encryptState(n[0], n[1], n[2], bswap(1));
    const ks = this.ks;
    ks[0] = bswap(this.y0) ^ m.s0;
    ks[1] = bswap(this.y1) ^ m.s1;
    ks[2] = bswap(this.y2) ^ m.s2;
    ks[3] = bswap(this.y3) ^ m.s3;
    out.set(this.ksBytes, at);
  }

  /** GHASH over C = c[cAt, +length) and the length block, from the state after prepared associated data. */
  private ghash(aad: GcmAad, c: Uint8Array, cAt: number, length: number): void {
    [this.y0, this.y1, this.y2, this.y3] = aad.y;
    this.finishGhash(aad.bytes, c, cAt, length);
  }

  private finishGhash(aadBytes: number, c: Uint8Array, cAt: number, length: number): void {
    this.absorb(c, cAt, length);
    // lengths in bits, 64-bit big-endian each (values here are far below 2^32 bits)
    this.y1 ^= aadBytes * 8;
    this.y3 ^= length * 8;
    this.multiply();
  }

  /** Y = (Y xor X)·H for each 16-byte block X of data[at, at + length), the last one zero-padded. */
  private absorb(data: Uint8Array, at: number, length: number): void {
    const full = at + length - (length % 16);
    const end = at + length;
    for (let o = at; o < full; o += 16) {
      this.y0 ^= be32(data, o);
      this.y1 ^= be32(data, o + 4);
      this.y2 ^= be32(data, o + 8);
      this.y3 ^= be32(data, o + 12);
      this.multiply();
    }
    if (full === end) return;
    const w = [0, 0, 0, 0];
    for (let i = full; i < end; i++) w[(i - full) >> 2]! |= data[i]! << (24 - (((i - full) & 3) << 3));
    this.y0 ^= w[0]!;
    this.y1 ^= w[1]!;
    this.y2 ^= w[2]!;
    this.y3 ^= w[3]!;
    this.multiply();
  }

  /** Y = Y·H in GF(2^128), a nibble at a time from the last byte to the first (Shoup's method). */
  private multiply(): void {
    const t = this.table;
    let z0 = 0;
    let z1 = 0;
    let z2 = 0;
    let z3 = 0;
    for (let k = 15; k >= 0; k--) {
      const word = k < 8 ? (k < 4 ? this.y0 : this.y1) : k < 12 ? this.y2 : this.y3;
      const byte = (word >>> ((3 - (k & 3)) << 3)) & 0xff;
      // low nibble, then high nibble; every step but the very first shifts Z right by 4 first
      if (k !== 15) {
        const rem = z3 & 0xf;
        z3 = (z3 >>> 4) | (z2 << 28);
        z2 = (z2 >>> 4) | (z1 << 28);
        z1 = (z1 >>> 4) | (z0 << 28);
        z0 = (z0 >>> 4) ^ REM_4BIT[rem]!;
      }
      let i = (byte & 0xf) << 2;
      z0 ^= t[i]!;
      z1 ^= t[i + 1]!;
      z2 ^= t[i + 2]!;
      z3 ^= t[i + 3]!;
      const rem = z3 & 0xf;
      z3 = (z3 >>> 4) | (z2 << 28);
      z2 = (z2 >>> 4) | (z1 << 28);
      z1 = (z1 >>> 4) | (z0 << 28);
      z0 = (z0 >>> 4) ^ REM_4BIT[rem]!;
      i = (byte >>> 4) << 2;
      z0 ^= t[i]!;
      z1 ^= t[i + 1]!;
      z2 ^= t[i + 2]!;
      z3 ^= t[i + 3]!;
    }
    this.y0 = z0 >>> 0;
    this.y1 = z1 >>> 0;
    this.y2 = z2 >>> 0;
    this.y3 = z3 >>> 0;
  }

  /** table[8] = H, [4] = H·x, [2] = H·x², [1] = H·x³ (GCM's reflected bit order), the rest their sums. */
  private initTable(h0: number, h1: number, h2: number, h3: number): void {
    const t = this.table;
    const put = (i: number, v: readonly number[]) => t.set(v, i * 4);
    const get = (i: number) => [t[i * 4]!, t[i * 4 + 1]!, t[i * 4 + 2]!, t[i * 4 + 3]!];
    let v = [h0, h1, h2, h3];
    for (const i of [8, 4, 2, 1]) {
      put(i, v);
      const carry = v[3]! & 1;
      v = [
        ((v[0]! >>> 1) ^ (carry ? 0xe1000000 : 0)) >>> 0,
        ((v[1]! >>> 1) | (v[0]! << 31)) >>> 0,
        ((v[2]! >>> 1) | (v[1]! << 31)) >>> 0,
        ((v[3]! >>> 1) | (v[2]! << 31)) >>> 0,
      ];
    }
    for (const base of [2, 4, 8]) {
      for (let i = 1; i < base; i++) {
        const a = get(base);
        const b = get(i);
        put(
          base + i,
          [a[0]! ^ b[0]!, a[1]! ^ b[1]!, a[2]! ^ b[2]!, a[3]! ^ b[3]!].map((x) => x >>> 0),
        );
      }
    }
  }
}

/** The nonce as the three little-endian words of the counter block J0 = nonce || counter. */
type NonceWords = readonly [number, number, number];
const nonceWords = (nonce: Uint8Array): NonceWords => [le32(nonce, 0), le32(nonce, 4), le32(nonce, 8)];

function checkNonce(nonce: Uint8Array): void {
  // veil supports exactly one parameter set: 96-bit nonce, 128-bit tag (SP 800-38D's recommended)
  if (nonce.length !== GCM_NONCE_BYTES) throw new RangeError('AES-GCM nonce must be 96 bits');
}

/** The length block carries each length's low 32 bits of bit count only: refuse 512 MiB and more. */
const MAX_BYTES = 2 ** 29 - 1;
function checkLengths(aad: number, text: number): void {
  if (aad > MAX_BYTES || text > MAX_BYTES) throw new RangeError('AES-GCM input too long');
}
