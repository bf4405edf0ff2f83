import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { hmacSha256 } from '../../../src/engine/transformers/hmac-sha256.ts';
import { mask } from '../../../src/engine/transformers/mask.ts';
import { redact } from '../../../src/engine/transformers/redact.ts';
import { codeOf, deps, FIELD, keysWith, OTHER_FIELD, ref } from './fixtures.ts';

describe('hmac-sha256 pseudonym', () => {
  const keys = keysWith([['h', 'hmac-sha256', 32, 3]]);
  const t = hmacSha256({ key: ref('h', 'hmac-sha256'), outputBytes: 32 }, deps(keys));
  const f = t.bind(FIELD);

  it('is stable per field and key, differs across fields, values and keys', () => {
    expect(f.protect('alice')).toBe(f.protect('alice'));
    expect(f.protect('alice')).not.toBe(f.protect('alicf'));
    expect(t.bind(OTHER_FIELD).protect('alice')).not.toBe(f.protect('alice'));
    const other = hmacSha256({ key: ref('h', 'hmac-sha256'), outputBytes: 32 }, deps(keysWith([['h', 'hmac-sha256', 32, 4]])));
    expect(other.bind(FIELD).protect('alice')).not.toBe(f.protect('alice'));
  });

  it('carries its key version and truncates to outputBytes', () => {
    const short = hmacSha256({ key: ref('h', 'hmac-sha256'), outputBytes: 16 }, deps(keys)).bind(FIELD);
    const bytes = Buffer.from(short.protect('alice'), 'base64url');
    expect(bytes).toHaveLength(5 + 16);
    expect(bytes[0]).toBe(0xa3);
    expect(bytes.readUInt32BE(1)).toBe(1);
    expect(Buffer.from(f.protect('alice'), 'base64url').subarray(5, 21)).toEqual(bytes.subarray(5));
  });

  it('separates the binding label from the value (no concatenation ambiguity)', () => {
    const a = hmacSha256({ key: ref('h', 'hmac-sha256'), outputBytes: 32, binding: 'ab' }, deps(keys)).bind(FIELD);
    const b = hmacSha256({ key: ref('h', 'hmac-sha256'), outputBytes: 32, binding: 'a' }, deps(keys)).bind(FIELD);
    expect(a.protect('c')).not.toBe(b.protect('bc'));
  });

  it('cannot unprotect', () => {
    expect(codeOf(() => f.unprotect(f.protect('x')))).toBe('ACTION_NOT_CONFIGURED');
  });
});

describe('mask', () => {
  it('keeps first/last N code points and preserved characters', () => {
    const m = mask({ keepFirst: 0, keepLast: 4, char: '*', preserve: '- ' }).bind(FIELD);
    expect(m.protect('4111-1111-1111-1234')).toBe('****-****-****-1234');
    const e = mask({ keepFirst: 1, keepLast: 0, char: '•', preserve: '@.' }).bind(FIELD);
    expect(e.protect('alice@example.com')).toBe('a••••@•••••••.•••');
    expect(mask({ keepFirst: 2, keepLast: 2, char: '#', preserve: '' }).bind(FIELD).protect('Ωμέγα😀x')).toBe('Ωμ###😀x');
  });

  it('masks short values whole so they never come back in clear', () => {
    const m = mask({ keepFirst: 2, keepLast: 2, char: '*', preserve: '' }).bind(FIELD);
    expect(m.protect('abcd')).toBe('****');
    expect(m.protect('')).toBe('');
    expect(m.protect('abcde')).toBe('ab*de');
  });

  it('keeps the length in code points for any input', () => {
    const m = mask({ keepFirst: 1, keepLast: 1, char: '*', preserve: '' }).bind(FIELD);
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (s) => {
        expect(Array.from(m.protect(s))).toHaveLength(Array.from(s).length);
      }),
    );
  });

  it('cannot unprotect, and refuses lone surrogates', () => {
    const m = mask({ keepFirst: 0, keepLast: 0, char: '*', preserve: '' }).bind(FIELD);
    expect(codeOf(() => m.unprotect('***'))).toBe('ACTION_NOT_CONFIGURED');
    expect(codeOf(() => m.protect('\ud800'))).toBe('VALUE_NOT_IN_ALPHABET');
  });
});

describe('redact', () => {
  it('replaces every value with the constant and cannot unprotect', () => {
    const r = redact({ value: '[REDACTED]' }).bind(FIELD);
    expect(r.protect('alice')).toBe('[REDACTED]');
    expect(r.protect('')).toBe('[REDACTED]');
    expect(codeOf(() => r.unprotect('[REDACTED]'))).toBe('ACTION_NOT_CONFIGURED');
  });
});
