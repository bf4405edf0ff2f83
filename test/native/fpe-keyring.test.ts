import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTransformer, MemoryKeyProvider, NAMED_ALPHABETS } from '../../src/engine/index.ts';
import { fpeKeyring, offsetsOf, type FpeMode } from '../../src/native/index.ts';
import { mulberry32 } from '../helpers/seeded-random.ts';
import { DEFAULT_FPE_ALPHABET, hex, vectors, type FpeVector } from '../engine/crypto/vectors.ts';

const numeralsOf = (text: string, alphabet: readonly string[]) => Uint16Array.from(Array.from(text), (c) => alphabet.indexOf(c));
const textOf = (numerals: Uint16Array, alphabet: readonly string[]) => Array.from(numerals, (n) => alphabet[n]).join('');
/** one value's numerals and its offsets, as a batch of one */
const one = (numerals: Uint16Array) => [numerals, offsetsOf([numerals.length])] as const;

/** the domain rule's shortest length, and the longest each mode takes (FF1: the transformer's 4096; FF3-1: maxlen) */
const minLength = (radix: number) => Math.max(2, Math.ceil(Math.log(1e6) / Math.log(radix) - 1e-9));
const maxLength = (mode: FpeMode, radix: number) => (mode === 'ff1' ? 4096 : 2 * Math.floor(96 / Math.log2(radix) + 1e-9));

/** a random alphabet: a named one, or `radix` code points from a random block (BMP and beyond, below 256 too) */
function randomAlphabet(int: (n: number) => number): string[] {
  const named = Object.values(NAMED_ALPHABETS);
  if (int(2) === 0) return Array.from(named[int(named.length)]!);
  const radix = [2, 3, 7, 11, 26, 94, 200, 255, 256, 1000, 4096, 65536][int(12)]!;
  const start = radix > 200 ? [0x100, 0x4e00, 0x10000][int(3)]! : [0x21, 0xc0, 0x3b1, 0x1f600][int(4)]!;
  // code points past the surrogates when a block would run into them
  return Array.from({ length: radix }, (_, i) => String.fromCodePoint(start + i >= 0xd800 && start < 0xd800 ? start + i + 0x800 : start + i));
}

describe('the native core: FF1 and FF3-1 keyring (issue 42)', () => {
  /** random values per mode: npm test's short form; `npm run test:native-differential` takes 1,000,000 each */
  const DIFFERENTIAL_VALUES = Number(process.env.VEIL_NATIVE_DIFF_VALUES ?? 5010);

  it.each(['ff1', 'ff3-1'] as const)(
    `differential: gives the %s transformer's outputs numeral for numeral on ${DIFFERENTIAL_VALUES} random values (keys of 16, 24 and 32 bytes, one per subject in one keyring; alphabets of 2 to 65536 characters; tweaks; every length the mode takes), and decrypts them`,
    (mode) => {
      const random = mulberry32(Number(process.env.VEIL_NATIVE_DIFF_SEED ?? 42) + (mode === 'ff1' ? 0 : 1));
      const int = (n: number) => Math.floor(random() * n);
      const ring = fpeKeyring();
      const tally = { values: 0, keys: 0, mismatches: 0, failedDecrypts: 0 };
      while (tally.values < DIFFERENTIAL_VALUES) {
        const key = randomBytes([16, 24, 32][int(3)]!);
        const subject = `subject-${tally.keys++}`;
        ring.add(subject, mode, key);
        const keys = new MemoryKeyProvider();
        keys.add('k', mode, new Uint8Array(key), 'now');
        const alphabet = randomAlphabet(int);
        const radix = alphabet.length;
        const tweak = randomBytes(mode === 'ff1' ? int(33) : 7);
        const step = { type: mode, key: 'k', customAlphabet: alphabet.join(''), tweakHex: tweak.toString('hex'), keepFirst: 0, keepLast: 0, luhn: false };
        const transformer = createTransformer(step, () => ({ name: 'k', id: 'k', type: mode, version: 1 }), { keys, random: (b) => b }).bind({
          className: 'C',
          propertyName: 'p',
        });
        const [min, max] = [minLength(radix), Math.min(maxLength(mode, radix), minLength(radix) + 60)];
        const count = Math.min(1 + int(200), DIFFERENTIAL_VALUES - tally.values);
        const lengths = Array.from({ length: count }, () => min + int(max - min + 1));
        const numerals = Uint16Array.from({ length: lengths.reduce((a, b) => a + b, 0) }, () => int(radix));
        const offsets = offsetsOf(lengths);
        const encrypted = ring.encryptMany(subject, radix, tweak, numerals, offsets);
        lengths.forEach((_, i) => {
          const value = textOf(numerals.subarray(offsets[i], offsets[i + 1]), alphabet);
          if (transformer.protect(value) !== textOf(encrypted.subarray(offsets[i], offsets[i + 1]), alphabet)) tally.mismatches++;
        });
        const decrypted = ring.decryptMany(subject, radix, tweak, encrypted, offsets);
        tally.failedDecrypts += Buffer.compare(Buffer.from(decrypted.buffer), Buffer.from(numerals.buffer)) === 0 ? 0 : 1;
        tally.values += count;
      }
      console.log(
        `native differential (${mode}): ${tally.values} values, ${tally.keys} keys in one keyring, ${tally.mismatches} mismatches, ${tally.failedDecrypts} batches not decrypting back`,
      );
      expect({ values: tally.values, mismatches: tally.mismatches, failedDecrypts: tally.failedDecrypts }).toEqual({
        values: DIFFERENTIAL_VALUES,
        mismatches: 0,
        failedDecrypts: 0,
      });
      expect(ring.size).toBe(tally.keys);
    },
    600_000,
  );

  it('NIST SP 800-38G FF1 samples 1–9, both ways', () => {
    const { vectors: list } = vectors<{ vectors: FpeVector[] }>('nist-ff1.json');
    expect(list.map((v) => v.sample)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const v of list) {
      const alphabet = Array.from(v.alphabet ?? DEFAULT_FPE_ALPHABET);
      const ring = fpeKeyring();
      ring.add('k', 'ff1', hex(v.keyHex));
      expect(textOf(ring.encryptMany('k', v.radix, hex(v.tweakHex), ...one(numeralsOf(v.plaintext, alphabet))), alphabet), `sample ${v.sample}`).toBe(
        v.ciphertext,
      );
      expect(textOf(ring.decryptMany('k', v.radix, hex(v.tweakHex), ...one(numeralsOf(v.ciphertext, alphabet))), alphabet), `sample ${v.sample}`).toBe(
        v.plaintext,
      );
    }
  });

  it('the FF3-1 vectors (ACVP and Ubiq; AES-128, -192, -256; several radixes), both ways', () => {
    const { vectors: list } = vectors<{ vectors: FpeVector[] }>('ff3-1.json');
    expect(list.length).toBeGreaterThanOrEqual(20);
    for (const v of list) {
      const alphabet = Array.from(v.alphabet ?? DEFAULT_FPE_ALPHABET);
      const ring = fpeKeyring();
      ring.add('k', 'ff3-1', hex(v.keyHex));
      expect(textOf(ring.encryptMany('k', v.radix, hex(v.tweakHex), ...one(numeralsOf(v.plaintext, alphabet))), alphabet), v.id).toBe(v.ciphertext);
      expect(textOf(ring.decryptMany('k', v.radix, hex(v.tweakHex), ...one(numeralsOf(v.ciphertext, alphabet))), alphabet), v.id).toBe(v.plaintext);
    }
  });

  it('a batch of many lengths gives each value what it gives alone, and an empty batch gives nothing', () => {
    const ring = fpeKeyring();
    ring.add('k', 'ff1', randomBytes(32));
    const tweak = randomBytes(8);
    const values = [6, 7, 6, 30, 200, 6].map((n) => Uint16Array.from({ length: n }, (_, i) => (i * 7) % 10));
    const offsets = offsetsOf(values.map((v) => v.length));
    const together = ring.encryptMany('k', 10, tweak, Uint16Array.from(values.flatMap((v) => [...v])), offsets);
    values.forEach((v, i) => expect([...together.subarray(offsets[i], offsets[i + 1])]).toEqual([...ring.encryptMany('k', 10, tweak, ...one(v))]));
    expect(ring.encryptMany('k', 10, tweak, new Uint16Array(0), offsetsOf([]))).toHaveLength(0);
  });

  it('refuses what it cannot encrypt as SP 800-38G defines it, naming the value by index and never its numerals, the key id or the key', () => {
    const ring = fpeKeyring();
    const key = randomBytes(16);
    ring.add('alice@example.com', 'ff1', key);
    ring.add('f3', 'ff3-1', key);
    const digits = (n: number) => Uint16Array.from({ length: n }, (_, i) => i % 10);
    const refusals: [string, () => unknown, RegExp][] = [
      [
        'a short value (domain rule)',
        () => ring.encryptMany('alice@example.com', 10, new Uint8Array(), ...one(digits(5))),
        /value 0: FF1 takes 6 to 4096 numerals in radix 10, not 5/,
      ],
      ['an FF1 value over 4096 numerals', () => ring.encryptMany('alice@example.com', 10, new Uint8Array(), ...one(digits(4097))), /not 4097/],
      [
        'an FF3-1 value over maxlen',
        () => ring.encryptMany('f3', 10, new Uint8Array(7), ...one(digits(57))),
        /FF3-1 takes 6 to 56 numerals in radix 10, not 57/,
      ],
      [
        'a numeral not below the radix',
        () => ring.encryptMany('alice@example.com', 10, new Uint8Array(), ...one(Uint16Array.of(1, 2, 3, 4, 5, 10))),
        /value 0: a numeral is not below the radix 10/,
      ],
      ['a radix of 1', () => ring.encryptMany('alice@example.com', 1, new Uint8Array(), ...one(digits(30))), /radix is 2 to 65536, not 1/],
      ['a radix over 65536', () => ring.encryptMany('alice@example.com', 65537, new Uint8Array(), ...one(digits(30))), /not 65537/],
      ['an FF3-1 tweak of 8 bytes', () => ring.encryptMany('f3', 10, new Uint8Array(8), ...one(digits(10))), /56 bits \(7 bytes\), not 8 bytes/],
      ['offsets past the numerals', () => ring.encryptMany('alice@example.com', 10, new Uint8Array(), digits(10), Uint32Array.of(0, 11)), /offsets run from 0/],
      ['an unknown key id', () => ring.encryptMany('bob@example.com', 10, new Uint8Array(), ...one(digits(10))), /no FPE key of that id/],
      ['a key of 20 bytes', () => ring.add('k', 'ff1', new Uint8Array(20)), /16, 24 or 32 bytes, not 20/],
      ['an unknown mode', () => ring.add('k', 'ff3' as FpeMode, new Uint8Array(16)), /"ff1" or "ff3-1"/],
    ];
    for (const [what, call, message] of refusals) {
      let error: Error | undefined;
      try {
        call();
      } catch (e) {
        error = e as Error;
      }
      expect(error?.message, what).toMatch(message);
      expect(error!.message, what).not.toMatch(/example\.com|0123456789|1, 2, 3/);
      expect(error!.message, what).not.toContain(key.toString('hex'));
    }
    expect(ring.size).toBe(2);
    expect(ring.remove('f3')).toBe(true);
    expect(ring.remove('f3')).toBe(false);
  });
});
