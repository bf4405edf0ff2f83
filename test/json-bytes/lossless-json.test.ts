import { describe, expect, it } from 'vitest';
import { cloneLossless, isJsonNumber, isJsonObject, parseLossless, printLossless, toPlain } from '../../src/json-bytes/lossless-json.ts';

const NUMBERS = [
  '18446744073709551615',
  '9007199254740993',
  '-9223372036854775808',
  '1.0',
  '-0',
  '1e400',
  '1E+2',
  '-1.50e-7',
  '0.10',
  '123456789012345678901234567890.5',
];

describe('lossless JSON for derived schemas', () => {
  it('prints every number as it was written, and compact JSON text back unchanged', () => {
    const text = `{"a":[${NUMBERS.join(',')}],"b":{"c":${NUMBERS[0]},"d":"xé\\n\\"q\\""},"e":true,"f":null,"g":[]}`;
    expect(printLossless(parseLossless(text))).toBe(text);
    for (const n of NUMBERS) expect(printLossless(parseLossless(n))).toBe(n);
    // whitespace goes, as with JSON.stringify; strings are escaped as JSON.stringify escapes them
    expect(printLossless(parseLossless(' { "k" : [ 1.0 , "\\u00e9\\/" ] } '))).toBe('{"k":[1.0,"é/"]}');
  });

  it('reads like JSON.parse otherwise: last duplicate wins in the first place, __proto__ an own key, the same errors', () => {
    expect(printLossless(parseLossless('{"a":1,"b":2,"a":3.0}'))).toBe('{"a":3.0,"b":2}');
    const proto = parseLossless('{"__proto__":{"x":1}}');
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
    expect(printLossless(proto)).toBe('{"__proto__":{"x":1}}');
    for (const bad of ['', '01', '{"a":1,}', '[1 2]', 'NaN', '"\t"', '\ufeff{}', '{"a"}']) {
      expect(() => JSON.parse(bad), bad).toThrow(SyntaxError);
      expect(() => parseLossless(bad), bad).toThrow(SyntaxError);
    }
  });

  it('numbers are objects that are not JSON objects; clone keeps them (structuredClone would not)', () => {
    const v = parseLossless('{"n":9007199254740993,"o":{"m":[1.0]}}');
    expect(isJsonObject(v)).toBe(true);
    expect(isJsonNumber((v as { n: unknown }).n)).toBe(true);
    expect(isJsonObject((v as { n: unknown }).n)).toBe(false);
    const copy = cloneLossless(v);
    expect(copy).not.toBe(v);
    expect(printLossless(copy)).toBe('{"n":9007199254740993,"o":{"m":[1.0]}}');
    expect(() => printLossless(structuredClone(v))).not.toThrow();
    expect(printLossless(structuredClone(v))).not.toBe(printLossless(v));
  });

  it('toPlain gives JSON.parse values, or bigints for integers beyond 2^53', () => {
    const text = '{"a":9223372036854775807,"b":[1.0,-0,1e400,12],"c":9007199254740993.0,"d":9007199254740991}';
    expect(toPlain(parseLossless(text))).toEqual(JSON.parse(text));
    expect(toPlain(parseLossless(text), true)).toEqual({ a: 9223372036854775807n, b: [1, -0, Infinity, 12], c: 9007199254740992, d: 9007199254740991 });
  });
});
