import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decode, encode, header } from '../../../src/engine/transformers/output-format.ts';

const TAG = 0xa1;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const accepts = (value: string) => {
  try {
    decode(value, TAG, 0);
    return true;
  } catch {
    return false;
  }
};

describe('protected value decoding', () => {
  it('accepts exactly the canonical spelling: any last character accepted iff re-encoding the decoded bytes gives the text back (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 40 }), (body) => {
        const canonical = encode(Uint8Array.from([...header(TAG, 1), ...body]));
        expect(decode(canonical, TAG, 0).payload).toEqual(Uint8Array.from(body));
        for (const c of ALPHABET) {
          const variant = canonical.slice(0, -1) + c;
          expect(accepts(variant)).toBe(Buffer.from(variant, 'base64url').toString('base64url') === variant);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('refuses stray bits after a 2- and a 3-character tail, padding, and characters outside base64url', () => {
    const value = encode(Uint8Array.from(header(TAG, 1)));
    expect(value.length % 4).toBe(3);
    expect(accepts(value)).toBe(true);
    // the tail's last character carries 2 unused bits: set them
    expect(accepts(value.slice(0, -1) + ALPHABET[ALPHABET.indexOf(value.at(-1)!) | 1])).toBe(false);
    const two = encode(Uint8Array.from([...header(TAG, 1), 1, 2]));
    expect(two.length % 4).toBe(2);
    expect(accepts(two.slice(0, -1) + ALPHABET[ALPHABET.indexOf(two.at(-1)!) | 8])).toBe(false);
    for (const bad of [`${value}=`, `${value.slice(0, -1)}+`, `${value.slice(0, -1)}/`, `${value} `, two.slice(0, -1)]) expect(accepts(bad)).toBe(false);
  });
});
