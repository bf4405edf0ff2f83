import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ff1 } from '../../../src/engine/transformers/ff1.ts';
import { ff31 } from '../../../src/engine/transformers/ff3-1.ts';
import { NAMED_ALPHABETS, type AlphabetName } from '../../../src/engine/fpe/alphabet.ts';
import { luhnResidue } from '../../../src/engine/fpe/fpe-format.ts';
import { codeOf, deps, FIELD, keysWith, OTHER_FIELD, ref } from './fixtures.ts';

const keys = keysWith([
  ['f1', 'ff1', 32, 5],
  ['f3', 'ff3-1', 32, 6],
]);
const base = { keepFirst: 0, keepLast: 0 };
const make = {
  ff1: (p: object) => ff1({ ...base, luhn: false, key: ref('f1', 'ff1', 1), ...p }, deps(keys)),
  'ff3-1': (p: object) => ff31({ ...base, key: ref('f3', 'ff3-1', 1), ...p }, deps(keys)),
};
const maxLen = { ff1: 60, 'ff3-1': 0 };

function valueOver(chars: string, min: number, max: number) {
  const symbols = Array.from(chars);
  return fc.array(fc.constantFrom(...symbols), { minLength: min, maxLength: max }).map((a) => a.join(''));
}

function minLen(radix: number): number {
  return Math.ceil(Math.log(1e6) / Math.log(radix) - 1e-9);
}

describe.each(['ff1', 'ff3-1'] as const)('%s transformer', (kind) => {
  const alphabets: [string, { alphabet?: AlphabetName; customAlphabet?: string }, string][] = [
    ...(Object.keys(NAMED_ALPHABETS) as AlphabetName[]).map((a) => [a, { alphabet: a }, NAMED_ALPHABETS[a]] as [string, { alphabet: AlphabetName }, string]),
    ['custom unicode', { customAlphabet: 'αβγδεζηθικλμ😀🙂' }, 'αβγδεζηθικλμ😀🙂'],
    ['custom binary', { customAlphabet: '01' }, '01'],
    // beyond ASCII but below 256: the output is built in one latin1 decode
    ['custom latin-1', { customAlphabet: 'ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏ' }, 'ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏ'],
  ];

  it.each(alphabets)('round-trips over %s, preserving length and alphabet', (_name, params, chars) => {
    const radix = Array.from(chars).length;
    const ffMax = kind === 'ff1' ? minLen(radix) + maxLen.ff1 : 2 * Math.floor(96 / Math.log2(radix));
    fc.assert(
      fc.property(valueOver(chars, minLen(radix), ffMax), fc.uint8Array({ minLength: 7, maxLength: 7 }), (value, tweak) => {
        const f = make[kind]({ ...params, tweakHex: Buffer.from(tweak).toString('hex') }).bind(FIELD);
        const out = f.protect(value);
        expect(Array.from(out)).toHaveLength(Array.from(value).length);
        for (const c of out) expect(chars).toContain(c);
        expect(f.unprotect(out)).toBe(value);
      }),
      { numRuns: 60 },
    );
  });

  it('keeps characters outside the alphabet in place', () => {
    const f = make[kind]({ alphabet: 'digits' }).bind(FIELD);
    const out = f.protect('4111-1111 1111/1111');
    expect(out).toMatch(/^\d{4}-\d{4} \d{4}\/\d{4}$/);
    expect(f.unprotect(out)).toBe('4111-1111 1111/1111');
    const mixed = make[kind]({ alphabet: 'alnum-lower' }).bind(FIELD);
    const email = mixed.protect('alice.smith@example.com');
    expect(email).toMatch(/^[0-9a-z]{5}\.[0-9a-z]{5}@[0-9a-z]{7}\.[0-9a-z]{3}$/);
    expect(mixed.unprotect(email)).toBe('alice.smith@example.com');
    expect(mixed.unprotect(mixed.protect('ÀLICE-bob-çarl-99'))).toBe('ÀLICE-bob-çarl-99');
    // characters above latin1 and outside the BMP around the numerals stay where they were
    const wide = f.protect('€4111 😀 1111 Ω 1111 1111😀');
    expect(wide).toMatch(/^€\d{4} 😀 \d{4} Ω \d{4} \d{4}😀$/);
    expect(f.unprotect(wide)).toBe('€4111 😀 1111 Ω 1111 1111😀');
  });

  it('keeps the first and last N alphabet characters in clear', () => {
    const f = make[kind]({ alphabet: 'digits', keepFirst: 6, keepLast: 4 }).bind(FIELD);
    const out = f.protect('4111-1111-1111-1234');
    expect(out.startsWith('4111-11')).toBe(true);
    expect(out.endsWith('1234')).toBe(true);
    expect(out).not.toBe('4111-1111-1111-1234');
    expect(f.unprotect(out)).toBe('4111-1111-1111-1234');
  });

  it('derives the tweak from className.propertyName by default', () => {
    const t = make[kind]({ alphabet: 'digits' });
    const a = t.bind(FIELD).protect('1234567890123456');
    expect(t.bind(OTHER_FIELD).protect('1234567890123456')).not.toBe(a);
    expect(t.bind(FIELD).protect('1234567890123456')).toBe(a);
  });

  it('refuses values below the domain rule radix^length >= 1,000,000 with a clear error', () => {
    const f = make[kind]({ alphabet: 'digits' }).bind(FIELD);
    expect(codeOf(() => f.protect('12345'))).toBe('VALUE_TOO_SHORT');
    expect(codeOf(() => f.protect(''))).toBe('VALUE_TOO_SHORT');
    expect(codeOf(() => f.protect('--------'))).toBe('VALUE_TOO_SHORT');
    expect(f.unprotect(f.protect('123456'))).toBe('123456');
    const kept = make[kind]({ alphabet: 'digits', keepFirst: 6, keepLast: 4 }).bind(FIELD);
    expect(codeOf(() => kept.protect('411111111234'))).toBe('VALUE_TOO_SHORT');
    const lower = make[kind]({ alphabet: 'lower' }).bind(FIELD);
    expect(codeOf(() => lower.protect('abcd'))).toBe('VALUE_TOO_SHORT');
    expect(lower.unprotect(lower.protect('abcde'))).toBe('abcde');
  });

  it('refuses values longer than it accepts', () => {
    const f = make[kind]({ alphabet: 'digits' }).bind(FIELD);
    expect(codeOf(() => f.protect('1'.repeat(kind === 'ff1' ? 4097 : 57)))).toBe('VALUE_TOO_LONG');
  });

  it('refuses lone surrogates', () => {
    expect(codeOf(() => make[kind]({ alphabet: 'digits' }).bind(FIELD).protect('123456\udc00'))).toBe('VALUE_NOT_IN_ALPHABET');
  });

  it('answers a batch as it answers each value alone: outputs, refusals, characters outside the alphabet and surrogates', () => {
    // protectMany builds latin1 outputs in one decode and reads surrogates only where it meets them
    const units = ['0', '7', '9', 'a', 'z', '-', ' ', 'é', 'ÿ', 'Ā', '€', '😀', '\ud800', '\udc00'];
    const value = fc.array(fc.constantFrom(...units), { minLength: 0, maxLength: 24 }).map((a) => a.join(''));
    const outcome = (fn: () => string) => {
      try {
        return fn();
      } catch (e) {
        return `refused ${(e as { code?: string }).code}`;
      }
    };
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 12 }), fc.nat(2), fc.nat(2), (values, keepFirst, keepLast) => {
        const f = make[kind]({ alphabet: 'alnum-lower', keepFirst, keepLast }).bind(FIELD);
        const many = f.protectMany!(values).map((v) => (typeof v === 'string' ? v : `refused ${v.code}`));
        expect(many).toEqual(values.map((v) => outcome(() => f.protect(v))));
        const protectedOnes = many.filter((v) => !v.startsWith('refused '));
        expect(f.unprotectMany!(protectedOnes)).toEqual(protectedOnes.map((v) => f.unprotect(v)));
      }),
      { numRuns: 300 },
    );
  });

  it('differs under another key', () => {
    const other =
      kind === 'ff1'
        ? ff1({ ...base, luhn: false, key: ref('f1', 'ff1', 1), alphabet: 'digits' }, deps(keysWith([['f1', 'ff1', 32, 77]])))
        : ff31({ ...base, key: ref('f3', 'ff3-1', 1), alphabet: 'digits' }, deps(keysWith([['f3', 'ff3-1', 32, 77]])));
    const mine = make[kind]({ alphabet: 'digits' }).bind(FIELD);
    expect(other.bind(FIELD).protect('9876543210987654')).not.toBe(mine.protect('9876543210987654'));
  });
});

describe('ff1 Luhn option', () => {
  const luhn = make.ff1({ alphabet: 'digits', luhn: true, keepLast: 4 }).bind(FIELD);
  const digits = (s: string) => Array.from(s.replace(/\D/g, ''), Number);

  it('turns Luhn-valid card numbers into Luhn-valid card numbers and back', () => {
    const valid = fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 15, maxLength: 18 }).map((body) => {
      const check = (10 - luhnResidue([...body, 0])) % 10;
      return [...body, check].join('');
    });
    fc.assert(
      fc.property(valid, (pan) => {
        expect(luhnResidue(digits(pan))).toBe(0);
        const out = luhn.protect(pan);
        expect(luhnResidue(digits(out))).toBe(0);
        expect(out.slice(-4)).toBe(pan.slice(-4));
        expect(luhn.unprotect(out)).toBe(pan);
      }),
      { numRuns: 200 },
    );
    expect(luhnResidue(digits(luhn.protect('4111-1111-1111-1111')))).toBe(0);
  });

  it('keeps the Luhn residue of an invalid number, so nothing is lost', () => {
    const out = luhn.protect('4111111111111112');
    expect(luhnResidue(digits(out))).toBe(luhnResidue(digits('4111111111111112')));
    expect(luhn.unprotect(out)).toBe('4111111111111112');
  });
});

describe('FPE key rotation', () => {
  it('stays on the pinned version after the keystore key rotates, and a second reference migrates', () => {
    const rotating = keysWith([['pan', 'ff1', 32, 11]]);
    const v1 = ff1({ ...base, luhn: false, alphabet: 'digits', key: ref('pan', 'ff1', 1) }, deps(rotating)).bind(FIELD);
    const old = v1.protect('4000123412341234');
    rotating.add('pan', 'ff1', new Uint8Array(32).fill(1), '2026-06-01T00:00:00.000Z');
    expect(v1.protect('4000123412341234')).toBe(old);
    expect(v1.unprotect(old)).toBe('4000123412341234');
    const v2 = ff1({ ...base, luhn: false, alphabet: 'digits', key: ref('pan', 'ff1', 2) }, deps(rotating)).bind(FIELD);
    const migrated = v2.protect(v1.unprotect(old));
    expect(migrated).not.toBe(old);
    expect(v2.unprotect(migrated)).toBe('4000123412341234');
  });
});
