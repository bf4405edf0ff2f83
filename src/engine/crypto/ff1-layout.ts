import { AesBlock, Block } from './aes-block.ts';
import { bitLength } from './numerals.ts';

/**
 * FF1's per-length constants and the arithmetic of its fast path (numbers in doubles): shared by
 * one-value rounds (Ff1.roundFast) and rounds of many values in lockstep (Ff1.runFastMany).
 */
/** Largest radix^m the fast path keeps in a double: acc * 256 + 255 must stay below 2^53. */
const FAST_LIMIT = 2 ** 44;

/**
 * x mod m for an integer 0 <= x with x + m <= 2^53, given inv = 1 / m. `%` on doubles is a call
 * to fmod (most of a round's cost, a dozen per round); here floor(x * inv) is the quotient or one
 * off either way (x * inv is within one of x / m), q * m <= x + m stays exact, and one
 * correction fixes the remainder.
 */
export function modBy(x: number, m: number, inv: number): number {
  const r = x - Math.floor(x * inv) * m;
  return r < 0 ? r + m : r >= m ? r - m : r;
}

export interface Layout {
  n: number;
  u: number;
  v: number;
  b: number;
  d: number;
  /** radix^u and radix^v as doubles (fast path) and BigInts (general path) */
  mu: number;
  mv: number;
  /** 1 / mu and 1 / mv, for modBy */
  invU: number;
  invV: number;
  muBig: bigint;
  mvBig: bigint;
  fast: boolean;
  /** bytes of S folded per modulo step while y * 256^chunk + 256^chunk - 1 + m stays within 2^53 (modBy) */
  chunkU: number;
  chunkV: number;
  /** CBC-MAC state after P and every constant block of Q */
  state: Block;
  /** word path (b <= 4): CBC-MAC state XOR the constant part of Q's last block, as LE words */
  words: boolean;
  c0: number;
  c1: number;
  c2: number;
  c3: number;
  /** the constant leading bytes of Q's last block (fast path: T's tail and the zero pad) */
  lastConst: Uint8Array;
  /** general path: P || Q with room for i and NUM(B) */
  pq: Uint8Array;
}

/**
 * Q's last block of round i, CBC-MAC-chained (XOR the state over P and Q's constant blocks), at
 * out[at..at+16): its constant bytes, [i], then NUM_radix(B) as b big-endian bytes.
 */
export function lastBlock(l: Layout, i: number, num: number, out: Uint8Array, at: number): void {
  const c = l.lastConst;
  const k = c.length;
  const state = l.state.bytes;
  for (let j = 0; j < k; j++) out[at + j] = c[j]! ^ state[j]!;
  out[at + k] = i ^ state[k]!;
  // num < 2^44: split into 32-bit halves
  let lo = num % 0x100000000;
  let hi = (num - lo) / 0x100000000;
  for (let j = 15; j > k; j--) {
    out[at + j] = (lo & 0xff) ^ state[j]!;
    lo = (lo >>> 8) | ((hi & 0xff) << 24);
    hi >>>= 8;
  }
}

/** XORs num (< 2^44) as big-endian bytes into out[from+1 .. last], last byte at `last`. */
export function xorNum(out: Uint8Array, last: number, from: number, num: number): void {
  let lo = num % 0x100000000;
  let hi = (num - lo) / 0x100000000;
  for (let j = last; j > from; j--) {
    out[j]! ^= lo & 0xff;
    lo = (lo >>> 8) | ((hi & 0xff) << 24);
    hi >>>= 8;
  }
}

/** y = NUM(S) mod m for S the first d bytes at bytes[at..], folding `chunk` bytes per modBy. */
export function reduceS(l: Layout, bytes: Uint8Array, at: number, m: number, inv: number, chunk: number): number {
  let y = 0;
  for (let j = 0; j < l.d;) {
    let v = 0;
    let scale = 1;
    for (const stop = Math.min(l.d, j + chunk); j < stop; j++) {
      v = v * 256 + bytes[at + j]!;
      scale *= 256;
    }
    y = modBy(y * scale + v, m, inv);
  }
  return y;
}

/** The constants of FF1 for inputs of n numerals under one key, radix and tweak (P, Q's constant part, CBC-MAC state). */
export function ff1Layout(aes: AesBlock, radix: number, tweak: Uint8Array, n: number): Layout {
  const t = tweak.length;
  const u = Math.floor(n / 2);
  const v = n - u;
  const muBig = BigInt(radix) ** BigInt(u);
  const mvBig = BigInt(radix) ** BigInt(v);
  const b = Math.ceil(bitLength(mvBig - 1n) / 8);
  const d = 4 * Math.ceil(b / 4) + 4;
  const p = new Uint8Array([
    1,
    2,
    1,
    (radix >>> 16) & 0xff,
    (radix >>> 8) & 0xff,
    radix & 0xff,
    10,
    u & 0xff,
    (n >>> 24) & 0xff,
    (n >>> 16) & 0xff,
    (n >>> 8) & 0xff,
    n & 0xff,
    (t >>> 24) & 0xff,
    (t >>> 16) & 0xff,
    (t >>> 8) & 0xff,
    t & 0xff,
  ]);
  const pad = (((-t - b - 1) % 16) + 16) % 16;
  const pq = new Uint8Array(16 + t + pad + 1 + b);
  pq.set(p);
  pq.set(tweak, 16);
  const fast = Number(mvBig) <= FAST_LIMIT && d <= 16;
  const state = new Block();
  state.bytes.set(p);
  aes.encryptWords(state.words);
  // fold every complete constant block of Q into the state; the last block varies per round
  const qConstEnd = pq.length - 16;
  for (let off = 16; off < qConstEnd; off += 16) {
    for (let j = 0; j < 16; j++) state.bytes[j]! ^= pq[off + j]!;
    aes.encryptWords(state.words);
  }
  const lastConst = pq.slice(qConstEnd, pq.length - 1 - b);
  // the most bytes per step with m * (256^chunk + 1) <= 2^53 (modBy's bound); m <= 2^44 allows one
  const chunkOf = (m: bigint) => {
    let chunk = 1;
    while (chunk < 6 && m * (256n ** BigInt(chunk + 1) + 1n) <= 2n ** 53n) chunk++;
    return chunk;
  };
  const last = new Block();
  last.bytes.set(lastConst);
  last.xorWords(state);
  const [c0, c1, c2, c3] = last.words as unknown as [number, number, number, number];
  const layout: Layout = {
    n,
    u,
    v,
    b,
    d,
    mu: Number(muBig),
    mv: Number(mvBig),
    invU: 1 / Number(muBig),
    invV: 1 / Number(mvBig),
    muBig,
    mvBig,
    fast,
    chunkU: chunkOf(muBig),
    chunkV: chunkOf(mvBig),
    words: fast && b <= 4 && d === 8,
    c0,
    c1,
    c2,
    c3,
    state,
    lastConst,
    pq,
  };
  return layout;
}
