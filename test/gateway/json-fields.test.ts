import { describe, expect, it } from 'vitest';
import { compileSelectors, locate, spliceStrings } from '../../src/gateway/json-fields.ts';
import { parseSelector } from '../../src/gateway/selector.ts';
import { foldKey } from '../../src/json-bytes/paths.ts';

const compiled = (...s: string[]) => compileSelectors(s.map(parseSelector));

describe('locating selected JSON values in bytes', () => {
  it('finds strings, numbers and booleans by selector, skipping absent and null places', () => {
    const body = Buffer.from('{"a": {"b": "x\\"y"}, "items": [{"c": 12345678901234567890}, {"c": null}, {}, {"c": true}], "e-mail": "z"}');
    const found = locate(body, compiled('a.b', 'items[*].c', '"e-mail"', 'missing.deep'));
    expect(found.mismatched).toEqual([]);
    expect(found.values.map((v) => [v.selector, v.occurrence, v.value])).toEqual([
      [0, 0, 'x"y'],
      [1, 0, '12345678901234567890'],
      [1, 1, 'true'],
      [2, 0, 'z'],
    ]);
  });

  it('matches keys case-insensitively when folding: every spelling and every duplicate, escaped or not', () => {
    const body = Buffer.from('{"Email":"a","EMAIL":"b","em\\u0061il":"c","eMaIl":"d","emails":"no","Card":{"NUMBER":"1"},"card":{"number":"2"}}');
    const folded = locate(body, compileSelectors(['email', 'card.number'].map(parseSelector), true));
    expect(folded.values.map((v) => v.value)).toEqual(['a', 'b', 'c', 'd', '1', '2']);
    const exact = locate(body, compileSelectors(['email', 'card.number'].map(parseSelector), false));
    expect(exact.values.map((v) => v.value)).toEqual(['c', '2']);
  });

  it('folds like Go and .NET: long s and Kelvin sign fold to s and k; ß stays', () => {
    expect(['EMAIL', 'ſsn', 'Kelvin', 'Straße', 'İd'].map(foldKey)).toEqual(['email', 'ssn', 'kelvin', 'straße', 'İd']);
    const body = Buffer.from('{"ſsn":"x","SSN":"y"}');
    expect(locate(body, compileSelectors([parseSelector('ssn')], true)).values.map((v) => v.value)).toEqual(['x', 'y']);
  });

  it('reports shape mismatches per selector', () => {
    const found = locate(Buffer.from('{"a": "scalar", "b": {"c": [1]}, "d": {"e": 1}}'), compiled('a.x', 'b.c', 'd[*]', 'ok'));
    expect(found.mismatched).toEqual([0, 1, 2]);
    expect(found.values).toEqual([]);
  });

  it('selects from a top-level array and nested arrays', () => {
    const found = locate(Buffer.from('[{"email":"a"},{"email":"b"}]'), compiled('[*].email'));
    expect(found.values.map((v) => v.value)).toEqual(['a', 'b']);
    expect(locate(Buffer.from('{"m":[["a","b"],["c"]]}'), compiled('m[*][*]')).values.map((v) => v.value)).toEqual(['a', 'b', 'c']);
  });

  it('reports every occurrence of a duplicated key', () => {
    expect(locate(Buffer.from('{"k":"1","k":"2"}'), compiled('k')).values.map((v) => v.value)).toEqual(['1', '2']);
  });

  it.each(['', '{', '{"a":1,}', "{'a':1}", '{"a":1} x', 'NaN'])('refuses %j as BODY_NOT_JSON', (text) => {
    expect(() => locate(Buffer.from(text), compiled('a'))).toThrow(expect.objectContaining({ code: 'BODY_NOT_JSON' }));
  });

  it('refuses invalid UTF-8', () => {
    expect(() => locate(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), compiled('a'))).toThrow(
      expect.objectContaining({ code: 'BODY_NOT_JSON' }),
    );
  });

  it('splices new strings in and keeps every other byte', () => {
    const text = '{ "n": 1.0,\n  "a": "old",  "big": 9007199254740993, "b": 7 }';
    const body = Buffer.from(text);
    const found = locate(body, compiled('a', 'b'));
    const out = spliceStrings(
      body,
      found.values.map((v) => ({ start: v.start, end: v.end, text: `<${v.value}>"\u00e9` })),
    ).toString('utf8');
    expect(out).toBe('{ "n": 1.0,\n  "a": "<old>\\"é",  "big": 9007199254740993, "b": "<7>\\"é" }');
    expect(spliceStrings(body, [])).toBe(body);
  });
});
