import { describe, expect, it } from 'vitest';
import { FF1 } from '@noble/ciphers/ff1.js';
import fc from 'fast-check';
import { Ff1 } from '../../../src/engine/crypto/ff1.ts';
import { Ff31 } from '../../../src/engine/crypto/ff3-1.ts';
import { DEFAULT_FPE_ALPHABET, hex, vectors, type FpeVector } from './vectors.ts';

const numerals = (s: string, alphabet: string) =>
  Array.from(s, (c) => {
    const i = alphabet.indexOf(c);
    if (i < 0) throw new Error(`vector character outside its alphabet`);
    return i;
  });
const text = (x: number[], alphabet: string) => x.map((i) => alphabet[i]).join('');

describe('FF1: NIST SP 800-38G samples 1–9', () => {
  const { vectors: list } = vectors<{ vectors: FpeVector[] }>('nist-ff1.json');
  it('has all nine samples', () => expect(list.map((v) => v.sample)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]));
  it.each(list)('sample $sample (radix $radix)', (v) => {
    const alphabet = v.alphabet ?? DEFAULT_FPE_ALPHABET;
    const ff1 = new Ff1(hex(v.keyHex), v.radix, hex(v.tweakHex));
    expect(text(ff1.encrypt(numerals(v.plaintext, alphabet)), alphabet)).toBe(v.ciphertext);
    expect(text(ff1.decrypt(numerals(v.ciphertext, alphabet)), alphabet)).toBe(v.plaintext);
  });
});

describe('FF3-1 vectors (ACVP and Ubiq, 56-bit tweaks)', () => {
  const { vectors: list } = vectors<{ vectors: FpeVector[] }>('ff3-1.json');
  it('covers AES-128/192/256 and several radixes', () => {
    expect(list.length).toBeGreaterThanOrEqual(20);
    expect(new Set(list.map((v) => hex(v.keyHex).length))).toEqual(new Set([16, 24, 32]));
  });
  it.each(list)('$id (radix $radix)', (v) => {
    const alphabet = v.alphabet ?? DEFAULT_FPE_ALPHABET;
    const ff3 = new Ff31(hex(v.keyHex), v.radix, hex(v.tweakHex));
    expect(text(ff3.encrypt(numerals(v.plaintext, alphabet)), alphabet)).toBe(v.ciphertext);
    expect(text(ff3.decrypt(numerals(v.ciphertext, alphabet)), alphabet)).toBe(v.plaintext);
  });
  it('refuses tweaks that are not 56 bits', () => {
    expect(() => new Ff31(new Uint8Array(16), 10, new Uint8Array(8))).toThrow(/56 bits/);
  });
});

describe('FF1 against a peer implementation (@noble/ciphers ff1)', () => {
  it('agrees on random keys, radixes, lengths and tweaks (fast and BigInt paths)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(2, 10, 16, 26, 36, 62, 64, 255, 1000, 65535),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ maxLength: 40 }),
        fc.integer({ min: 0, max: 70 }),
        fc.infiniteStream(fc.nat()),
        (radix, key, tweak, extra, rand) => {
          const n = Ff1.minLength(radix) + extra;
          const it = rand[Symbol.iterator]();
          const x = Array.from({ length: n }, () => it.next().value! % radix);
          const ours = new Ff1(key, radix, tweak).encrypt(x);
          expect(ours).toEqual(FF1(radix, key, tweak).encrypt(x));
          expect(new Ff1(key, radix, tweak).decrypt(ours)).toEqual(x);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("agrees at the fast path's edges: halves just under and over 2^44, extreme numerals", () => {
    // the fast path keeps radix^ceil(n/2) <= 2^44 in doubles and reduces modulo it by reciprocal
    const edges: [number, number][] = [
      [2, 87],
      [2, 88],
      [2, 89],
      [10, 25],
      [10, 26],
      [10, 27],
      [36, 16],
      [36, 17],
      [62, 14],
      [62, 15],
      [65535, 5],
      [65535, 4],
      [7, 31],
      [3, 55],
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...edges),
        fc
          .uint8Array({ minLength: 16, maxLength: 32 })
          .filter((k) => k.length !== 20 && k.length !== 28 && (k.length === 16 || k.length === 24 || k.length === 32)),
        fc.uint8Array({ maxLength: 12 }),
        fc.constantFrom('min', 'max', 'random'),
        fc.infiniteStream(fc.nat()),
        ([radix, n], key, tweak, kind, rand) => {
          const it = rand[Symbol.iterator]();
          const x = Array.from({ length: n }, () => (kind === 'min' ? 0 : kind === 'max' ? radix - 1 : it.next().value! % radix));
          const ours = new Ff1(key, radix, tweak).encrypt(x);
          expect(ours).toEqual(FF1(radix, key, tweak).encrypt(x));
          expect(new Ff1(key, radix, tweak).decrypt(ours)).toEqual(x);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('enforces the domain rule radix^minlen >= 1,000,000', () => {
    const f = new Ff1(new Uint8Array(16), 10, new Uint8Array());
    expect(() => f.encrypt([1, 2, 3, 4, 5])).toThrow(/domain/);
    expect(f.decrypt(f.encrypt([1, 2, 3, 4, 5, 6]))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(Ff1.minLength(10)).toBe(6);
    expect(Ff1.minLength(2)).toBe(20);
    expect(Ff1.minLength(36)).toBe(4);
  });
});
