import { describe, expect, it } from 'vitest';
import { JsonBytesFault } from '../../src/json-bytes/errors.ts';
import { spliceJson } from '../../src/json-bytes/splice.ts';

describe('spliceJson', () => {
  const bytes = Buffer.from('{"a": "x", "n": 1.0, "b": "y"}');

  it('replaces each span by its JSON text, in any order, and keeps every other byte', () => {
    const out = spliceJson(bytes, [
      { start: 26, end: 29, json: '"é\\""' },
      { start: 6, end: 9, json: '"longer value"' },
    ]);
    expect(out.toString('utf8')).toBe('{"a": "longer value", "n": 1.0, "b": "é\\""}');
    expect(out.length).toBe(Buffer.byteLength(out.toString('utf8')));
  });

  it('returns the input itself when there is nothing to replace', () => {
    expect(spliceJson(bytes, [])).toBe(bytes);
  });

  it('refuses overlapping spans (two paths reaching one value) as a bug, not a data error', () => {
    expect(() =>
      spliceJson(bytes, [
        { start: 6, end: 9, json: '"1"' },
        { start: 6, end: 9, json: '"2"' },
      ]),
    ).toThrow(expect.objectContaining({ name: 'JsonBytesFault', code: 'SPLICE_OVERLAP' }));
    expect(() =>
      spliceJson(bytes, [
        { start: 6, end: 9, json: '"1"' },
        { start: 8, end: 9, json: '"2"' },
      ]),
    ).toThrow(JsonBytesFault);
  });
});
