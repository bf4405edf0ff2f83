import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { aesSiv } from '../../../src/engine/transformers/aes-siv.ts';
import { aesGcm } from '../../../src/engine/transformers/aes-gcm.ts';
import { codeOf, deps, FIELD, keysWith, OTHER_FIELD, ref } from './fixtures.ts';

const cases = [
  { name: 'aes-siv', make: aesSiv, type: 'aes-siv' as const, size: 64, deterministic: true },
  { name: 'aes-gcm', make: aesGcm, type: 'aes-gcm' as const, size: 32, deterministic: false },
];

describe.each(cases)('$name transformer', ({ make, type, size, deterministic }) => {
  const keys = keysWith([['k', type, size, 1]]);
  const t = make({ key: ref('k', type) }, deps(keys));
  const field = t.bind(FIELD);

  it('round-trips any well-formed string, including empty and astral characters', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (value) => {
        expect(field.unprotect(field.protect(value))).toBe(value);
      }),
      { numRuns: 300 },
    );
    for (const v of ['', 'a', '😀', 'Ωμέγα', '\u0000', 'x'.repeat(10_000)]) expect(field.unprotect(field.protect(v))).toBe(v);
  });

  it('outputs base64url text carrying the key version', () => {
    const out = field.protect('alice@example.com');
    expect(out).toMatch(/^[A-Za-z0-9_-]+$/);
    const bytes = Buffer.from(out, 'base64url');
    expect(bytes[0]).toBe(type === 'aes-siv' ? 0xa1 : 0xa2);
    expect(bytes.readUInt32BE(1)).toBe(1);
  });

  it(deterministic ? 'is deterministic per field' : 'is randomized', () => {
    expect(field.protect('same') === field.protect('same')).toBe(deterministic);
  });

  it('binds the output to className.propertyName', () => {
    const out = field.protect('alice@example.com');
    expect(codeOf(() => t.bind(OTHER_FIELD).unprotect(out))).toBe('PROTECTED_VALUE_INVALID');
    if (deterministic) expect(t.bind(OTHER_FIELD).protect('alice@example.com')).not.toBe(out);
  });

  it('shares outputs across fields that name the same binding label', () => {
    const shared = make({ key: ref('k', type), binding: 'email-join' }, deps(keys));
    const a = shared.bind(FIELD).protect('bob@example.com');
    expect(shared.bind(OTHER_FIELD).unprotect(a)).toBe('bob@example.com');
  });

  it('detects every edited character of a protected value', () => {
    const out = field.protect('4111111111111111');
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (let i = 0; i < out.length; i++) {
      const replacement = alphabet[(alphabet.indexOf(out[i]!) + 1 + (i % 5)) % 64]!;
      const edited = out.slice(0, i) + replacement + out.slice(i + 1);
      expect(['PROTECTED_VALUE_INVALID', 'KEY_VERSION_UNKNOWN']).toContain(codeOf(() => field.unprotect(edited)));
    }
  });

  it('rejects truncated, extended, non-base64 and foreign values', () => {
    const out = field.protect('value');
    for (const bad of [out.slice(0, -1), out.slice(0, -4), out.slice(0, 7), '', out + 'A', out + 'AAAA', '***', 'oQ', out.replace(/./, '+')]) {
      expect(['PROTECTED_VALUE_INVALID', 'KEY_VERSION_UNKNOWN']).toContain(codeOf(() => field.unprotect(bad)));
    }
  });

  it('keeps old versions readable after rotation and protects with the new primary', () => {
    const rotating = keysWith([['r', type, size, 7]]);
    const tr = make({ key: ref('r', type) }, deps(rotating)).bind(FIELD);
    const v1 = tr.protect('carol@example.com');
    rotating.add('r', type, new Uint8Array(size).fill(9), '2026-02-01T00:00:00.000Z');
    const v2 = tr.protect('carol@example.com');
    expect(Buffer.from(v1, 'base64url').readUInt32BE(1)).toBe(1);
    expect(Buffer.from(v2, 'base64url').readUInt32BE(1)).toBe(2);
    expect(tr.unprotect(v1)).toBe('carol@example.com');
    expect(tr.unprotect(v2)).toBe('carol@example.com');
  });

  it('refuses a value whose header names another or an unknown key version', () => {
    const rotating = keysWith([['r', type, size, 7]]);
    rotating.add('r', type, new Uint8Array(size).fill(3), '2026-02-01T00:00:00.000Z');
    const tr = make({ key: ref('r', type) }, deps(rotating)).bind(FIELD);
    const bytes = Buffer.from(tr.protect('dave'), 'base64url');
    bytes.writeUInt32BE(1, 1); // claims version 1 though sealed under 2
    expect(codeOf(() => tr.unprotect(bytes.toString('base64url')))).toBe('PROTECTED_VALUE_INVALID');
    bytes.writeUInt32BE(77, 1);
    expect(codeOf(() => tr.unprotect(bytes.toString('base64url')))).toBe('KEY_VERSION_UNKNOWN');
  });

  it('refuses lone surrogates rather than changing them', () => {
    expect(codeOf(() => field.protect('a\ud800b'))).toBe('VALUE_NOT_IN_ALPHABET');
  });

  it('does not unprotect under a different key', () => {
    const other = make({ key: ref('k', type) }, deps(keysWith([['k', type, size, 99]]))).bind(FIELD);
    expect(codeOf(() => other.unprotect(field.protect('erin')))).toBe('PROTECTED_VALUE_INVALID');
  });
});
