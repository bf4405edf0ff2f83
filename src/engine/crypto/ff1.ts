import { AesBlock, AesEcb, Block, bswap32 } from './aes-block.ts';
import { ff1Layout, lastBlock, modBy, reduceS, xorNum, type Layout } from './ff1-layout.ts';
import { domainMinLength, numeralsToBigInt, bigIntToNumerals, bytesToBigInt, bigIntToBytes } from './numerals.ts';

/** Fewest strings of one length worth a native call per round (below it, the JS cipher is faster). */
const BATCH_MIN = 4;

/**
 * FF1 (NIST SP 800-38G) over numerals 0..radix-1, for one key and one tweak. Per length it caches
 * the CBC-MAC state over P and the constant part of Q, so a round costs one AES block; while
 * radix^ceil(n/2) fits a double it carries A and B as numbers (no BigInt, no digit arrays per round).
 */
export class Ff1 {
  private readonly aes: AesBlock;
  private readonly radix: number;
  private readonly tweak: Uint8Array;
  private readonly layouts = new Map<number, Layout>();
  private readonly work = new Block();
  /** for rounds of many values at once (encryptMany) */
  private readonly ecb: AesEcb;

  constructor(key: Uint8Array, radix: number, tweak: Uint8Array) {
    if (!Number.isInteger(radix) || radix < 2 || radix > 65536) throw new RangeError('FF1 radix must be 2..65536');
    this.aes = new AesBlock(key);
    this.ecb = new AesEcb(key);
    this.radix = radix;
    this.tweak = Uint8Array.from(tweak);
  }

  /** Smallest length meeting the domain rule radix^minlen >= 1,000,000 (SP 800-38G §5.2). */
  static minLength(radix: number): number {
    return domainMinLength(radix);
  }

  encrypt(x: ArrayLike<number>): number[] {
    return this.run(x, true);
  }

  decrypt(x: ArrayLike<number>): number[] {
    return this.run(x, false);
  }

  private run(x: ArrayLike<number>, forward: boolean): number[] {
    const n = x.length;
    if (n < 2 || this.radix ** n < 1_000_000) throw new RangeError('FF1 input shorter than the domain rule allows');
    const layout = this.layout(n);
    return layout.fast ? this.runFast(layout, x, forward) : this.runBig(layout, x, forward);
  }

  private runFast(l: Layout, x: ArrayLike<number>, forward: boolean): number[] {
    const radix = this.radix;
    let a = 0;
    let b = 0;
    for (let i = 0; i < l.u; i++) a = a * radix + x[i]!;
    for (let i = l.u; i < l.n; i++) b = b * radix + x[i]!;
    if (forward) {
      for (let i = 0; i < 10; i++) {
        const even = (i & 1) === 0;
        const m = even ? l.mu : l.mv;
        // a and the round's y are both below m
        const c = a + this.roundFast(l, i, b, m, even ? l.invU : l.invV, even ? l.chunkU : l.chunkV);
        a = b;
        b = c >= m ? c - m : c;
      }
    } else {
      for (let i = 9; i >= 0; i--) {
        const even = (i & 1) === 0;
        const m = even ? l.mu : l.mv;
        const c = b - this.roundFast(l, i, a, m, even ? l.invU : l.invV, even ? l.chunkU : l.chunkV);
        b = a;
        a = c < 0 ? c + m : c;
      }
    }
    return this.numerals(l, a, b);
  }

  /** STR(A) || STR(B): a, b < 2^44, so a / radix is exact enough that its floor is the quotient */
  private numerals(l: Layout, a: number, b: number): number[] {
    const radix = this.radix;
    const out = new Array<number>(l.n);
    for (let i = l.u - 1; i >= 0; i--) {
      const q = Math.floor(a / radix);
      out[i] = a - q * radix;
      a = q;
    }
    for (let i = l.n - 1; i >= l.u; i--) {
      const q = Math.floor(b / radix);
      out[i] = b - q * radix;
      b = q;
    }
    return out;
  }

  /**
   * FF1 of many numeral strings: per length, the rounds of all of them in lockstep, each round's
   * AES blocks in one node:crypto call (AES-NI; a block costs far less than the JS cipher's)
   * instead of one JS block each. Same outputs as encrypt() one by one.
   */
  encryptMany(xs: readonly ArrayLike<number>[]): number[][] {
    return this.many(xs, true);
  }

  decryptMany(xs: readonly ArrayLike<number>[]): number[][] {
    return this.many(xs, false);
  }

  private many(xs: readonly ArrayLike<number>[], forward: boolean): number[][] {
    const out = new Array<number[]>(xs.length);
    const byLength = new Map<number, number[]>();
    xs.forEach((x, i) => {
      const group = byLength.get(x.length);
      if (group) group.push(i);
      else byLength.set(x.length, [i]);
    });
    for (const [n, indexes] of byLength) {
      const l = n >= 2 && this.radix ** n >= 1_000_000 ? this.layout(n) : undefined;
      if (l === undefined || !l.fast || indexes.length < BATCH_MIN) {
        for (const i of indexes) out[i] = this.run(xs[i]!, forward);
        continue;
      }
      const results = this.runFastMany(
        l,
        indexes.map((i) => xs[i]!),
        forward,
      );
      indexes.forEach((i, k) => (out[i] = results[k]!));
    }
    return out;
  }

  private runFastMany(l: Layout, xs: readonly ArrayLike<number>[], forward: boolean): number[][] {
    const radix = this.radix;
    const count = xs.length;
    const a = new Float64Array(count);
    const b = new Float64Array(count);
    xs.forEach((x, j) => {
      let aj = 0;
      let bj = 0;
      for (let i = 0; i < l.u; i++) aj = aj * radix + x[i]!;
      for (let i = l.u; i < l.n; i++) bj = bj * radix + x[i]!;
      a[j] = aj;
      b[j] = bj;
    });
    const blocks = new Uint8Array(16 * count);
    const blockWords = new Uint32Array(blocks.buffer);
    // a round's blocks differ only in NUM(B): the rest (constant bytes, [i], the MAC state) is copied
    const template = new Uint8Array(16);
    const templateWords = new Uint32Array(template.buffer);
    for (let r = 0; r < 10; r++) {
      const i = forward ? r : 9 - r;
      const even = (i & 1) === 0;
      const m = even ? l.mu : l.mv;
      const inv = even ? l.invU : l.invV;
      const chunk = even ? l.chunkU : l.chunkV;
      const fed = forward ? b : a;
      lastBlock(l, i, 0, template, 0);
      const w0 = templateWords[0]!;
      const w1 = templateWords[1]!;
      const w2 = templateWords[2]!;
      const w3 = templateWords[3]!;
      for (let j = 0; j < count; j++) {
        const w = 4 * j;
        blockWords[w] = w0;
        blockWords[w + 1] = w1;
        blockWords[w + 2] = w2;
        blockWords[w + 3] = w3;
        xorNum(blocks, 16 * j + 15, 16 * j + 15 - l.b, fed[j]!);
      }
      const encrypted = this.ecb.encryptBlocks(blocks);
      for (let j = 0; j < count; j++) {
        const y = reduceS(l, encrypted, 16 * j, m, inv, chunk);
        if (forward) {
          const c = a[j]! + y;
          a[j] = b[j]!;
          b[j] = c >= m ? c - m : c;
        } else {
          const c = b[j]! - y;
          b[j] = a[j]!;
          a[j] = c < 0 ? c + m : c;
        }
      }
    }
    return xs.map((_, j) => this.numerals(l, a[j]!, b[j]!));
  }

  /** y mod m for round i where `num` is NUM_radix of the half fed to the PRF. */
  private roundFast(l: Layout, i: number, num: number, m: number, inv: number, chunk: number): number {
    if (l.words) {
      // Q's last block is const || [i] || NUM(B) in b <= 4 bytes: only words 2 and 3 vary, so
      // the block is formed in registers; S is the first 8 bytes of R (d = 8)
      const tail = l.b === 4 ? num : i * 2 ** (8 * l.b) + num;
      const r = this.aes.encryptState(l.c0, l.c1, l.b === 4 ? l.c2 ^ (i << 24) : l.c2, l.c3 ^ bswap32(tail));
      const hi = bswap32(r.s0) >>> 0;
      const lo = bswap32(r.s1) >>> 0;
      if (chunk >= 4) return modBy(modBy(modBy(hi, m, inv) * 0x100000000, m, inv) + lo, m, inv);
      return modBy(modBy(modBy(hi, m, inv) * 0x10000 + (lo >>> 16), m, inv) * 0x10000 + (lo & 0xffff), m, inv);
    }
    const w = this.work;
    lastBlock(l, i, num, w.bytes, 0);
    this.aes.encryptWords(w.words);
    return reduceS(l, w.bytes, 0, m, inv, chunk);
  }

  private runBig(l: Layout, x: ArrayLike<number>, forward: boolean): number[] {
    const radix = BigInt(this.radix);
    let a = numeralsToBigInt(Array.prototype.slice.call(x, 0, l.u), radix);
    let b = numeralsToBigInt(Array.prototype.slice.call(x, l.u), radix);
    if (forward) {
      for (let i = 0; i < 10; i++) {
        const m = (i & 1) === 0 ? l.muBig : l.mvBig;
        const c = (a + this.roundBig(l, i, b)) % m;
        a = b;
        b = c;
      }
    } else {
      for (let i = 9; i >= 0; i--) {
        const m = (i & 1) === 0 ? l.muBig : l.mvBig;
        const c = (((b - this.roundBig(l, i, a)) % m) + m) % m;
        b = a;
        a = c;
      }
    }
    return [...bigIntToNumerals(a, radix, l.u), ...bigIntToNumerals(b, radix, l.v)];
  }

  private roundBig(l: Layout, i: number, num: bigint): bigint {
    const pq = l.pq;
    pq[pq.length - l.b - 1] = i;
    pq.set(bigIntToBytes(num, l.b), pq.length - l.b);
    const r = new Block();
    for (let off = 0; off < pq.length; off += 16) {
      for (let j = 0; j < 16; j++) r.bytes[j]! ^= pq[off + j]!;
      this.aes.encryptWords(r.words);
    }
    const s = new Uint8Array(Math.ceil(l.d / 16) * 16);
    s.set(r.bytes);
    for (let j = 1; j * 16 < l.d; j++) {
      const blk = new Block().set(r);
      const jb = bigIntToBytes(BigInt(j), 16);
      for (let q = 0; q < 16; q++) blk.bytes[q]! ^= jb[q]!;
      this.aes.encryptWords(blk.words);
      s.set(blk.bytes, j * 16);
    }
    return bytesToBigInt(s.subarray(0, l.d));
  }

  private layout(n: number): Layout {
    let layout = this.layouts.get(n);
    if (!layout) this.layouts.set(n, (layout = ff1Layout(this.aes, this.radix, this.tweak, n)));
    return layout;
  }
}
