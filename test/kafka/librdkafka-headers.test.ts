import { describe, expect, it } from 'vitest';
import { encodeHeaders } from '../../src/kafka/librdkafka-headers.ts';

/** The layout the patched binding reads (patches/kafka-javascript-2-encoded-headers.patch), decoded independently. */
function decode(b: Buffer): { key: string; value: Buffer | null }[] {
  const out: { key: string; value: Buffer | null }[] = [];
  let at = 0;
  while (at < b.length) {
    const k = b.readUInt32LE(at);
    const key = b.subarray(at + 4, at + 4 + k).toString('utf8');
    at += 4 + k;
    const v = b.readInt32LE(at);
    at += 4;
    out.push({ key, value: v === -1 ? null : Buffer.from(b.subarray(at, at + v)) });
    at += Math.max(0, v);
  }
  expect(at).toBe(b.length);
  return out;
}

describe('encodeHeaders', () => {
  it('keeps order, repeated keys, null, empty and binary values, and multi-byte keys', () => {
    const headers = [
      { key: 'a', value: Buffer.from('1') },
      { key: 'a', value: Buffer.from('2') },
      { key: 'nul', value: null },
      { key: 'empty', value: Buffer.alloc(0) },
      { key: 'bin', value: Buffer.from([0, 255, 128, 10]) },
      { key: 'clé-ключ-🔑', value: Buffer.from('x') },
      { key: '', value: Buffer.from('no name') },
    ];
    expect(decode(encodeHeaders(headers))).toEqual(headers);
  });

  it('encodes nothing for no headers', () => {
    expect(encodeHeaders([]).length).toBe(0);
  });

  it('reuses the buffer of a frozen list, and re-encodes a list that may change', () => {
    const frozen = Object.freeze([{ key: 'veil.pipeline', value: Buffer.from('p') }]);
    expect(encodeHeaders(frozen)).toBe(encodeHeaders(frozen));
    const open: { key: string; value: Buffer | null }[] = [{ key: 'k', value: Buffer.from('1') }];
    const first = encodeHeaders(open);
    open.push({ key: 'k2', value: null });
    expect(decode(encodeHeaders(open))).toEqual(open);
    expect(decode(first)).toEqual([{ key: 'k', value: Buffer.from('1') }]);
  });
});
