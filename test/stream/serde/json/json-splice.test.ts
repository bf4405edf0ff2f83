import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ValueError } from '../../../../src/engine/index.ts';
import { chainFrom } from '../../../helpers/chain-from.ts';
import { mappings, protectRecord } from '../../../../src/stream/serde/field-mappings.ts';
import { protectJsonBytes } from '../../../../src/stream/serde/json/json-splice.ts';
import { StreamError } from '../../../../src/stream/stream-error.ts';
import { stringText, valueText, ws } from '../../../helpers/json-text.ts';

type Chain = (value: string) => string;

const wrap: Chain = (s) => `<${s}>`;
const maps = (paths: string[], transform: Chain = wrap) =>
  mappings(
    paths,
    paths.map(() => chainFrom(transform)),
  );
const bytesOf = (input: string | Buffer) => (typeof input === 'string' ? Buffer.from(input, 'utf8') : input);

/** splices `input` (raw text or bytes) and returns the output as text */
function splice(input: string | Buffer, paths: string[], missing: 'pass' | 'dead-letter' = 'pass', transform: Chain = wrap): string {
  return protectJsonBytes(bytesOf(input), maps(paths, transform), missing).toString('utf8');
}

/** the StreamError a splice throws, as [code, message] */
function failure(input: string | Buffer, paths: string[], missing: 'pass' | 'dead-letter' = 'pass', transform: Chain = wrap): [string, string] {
  try {
    protectJsonBytes(bytesOf(input), maps(paths, transform), missing);
  } catch (e) {
    if (e instanceof StreamError) return [e.code, e.message];
    throw e;
  }
  throw new Error('expected a StreamError');
}

const NOT_JSON: [string, string] = ['RECORD_MALFORMED', 'the value is not JSON'];

describe('protectJsonBytes keeps every unmapped byte', () => {
  it('leaves numbers beyond double precision, 1.0, -0.0 and 1e400 as written', () => {
    const input =
      '{"id": 9223372036854775807, "n": 9007199254740993, "f": 1.0, "z": -0.0, "big": 1e400, "email": "a@b.c", "nested": {"x": [12345678901234567890123, 1.50, -0E-0]}}';
    expect(splice(input, ['email'])).toBe(input.replace('"a@b.c"', '"<a@b.c>"'));
  });

  it('leaves whitespace, key order and escapes of unmapped fields as written', () => {
    const input = '\n {\n  "b" : "caf\\u00e9",\t"a":"x\\/y\\n" ,"email"  :  "e" , "c":[ 1 , {"email":"deeper"} ]\r\n}\n';
    expect(splice(input, ['email'])).toBe(input.replace('"e"', '"<e>"'));
  });

  it('protects every occurrence of a duplicate key, at any depth', () => {
    expect(splice('{"email":"a","x":1,"email":"b"}', ['email'])).toBe('{"email":"<a>","x":1,"email":"<b>"}');
    expect(splice('{"address":{"city":"x","city":"y"},"address":{"city":"z"}}', ['address.city'])).toBe(
      '{"address":{"city":"<x>","city":"<y>"},"address":{"city":"<z>"}}',
    );
    expect(splice('{"email":null,"email":"b"}', ['email'])).toBe('{"email":null,"email":"<b>"}');
  });

  it('returns the input itself when nothing is edited', () => {
    const input = Buffer.from('{"a": 1.0}');
    expect(protectJsonBytes(input, maps(['email']), 'pass')).toBe(input);
    expect(protectJsonBytes(input, [], 'dead-letter')).toBe(input);
  });
});

describe('protectJsonBytes transforms mapped values', () => {
  it('decodes a mapped string (escapes, surrogate pairs) before the transform', () => {
    const seen: string[] = [];
    const spy: Chain = (s) => (seen.push(s), `<${s}>`);
    expect(splice('{"email":"a\\u0040b.c"}', ['email'], 'pass', spy)).toBe('{"email":"<a@b.c>"}');
    expect(splice('{"name":"\\ud83d\\ude00 \\"q\\" \\\\"}', ['name'], 'pass', spy)).toBe('{"name":"<😀 \\"q\\" \\\\>"}');
    expect(splice('{"name":"😀 ü ☃\u2028"}', ['name'], 'pass', spy)).toBe('{"name":"<😀 ü ☃\u2028>"}');
    expect(seen).toEqual(['a@b.c', '😀 "q" \\', '😀 ü ☃\u2028']);
  });

  it('writes a transform result as a JSON string literal, escaping what JSON needs', () => {
    expect(splice('{"a":"x"}', ['a'], 'pass', () => 'q"\\\n\u0001\ud800é')).toBe('{"a":"q\\"\\\\\\n\\u0001\\ud800é"}');
    expect(splice('{"a":"\\udc00"}', ['a'])).toBe('{"a":"<\\udc00>"}');
  });

  it('transforms numbers and booleans as their text in the document', () => {
    const seen: string[] = [];
    const spy: Chain = (s) => (seen.push(s), `<${s}>`);
    const input = '{"n": 1.0, "m": -0.0, "big": 9223372036854775807, "e": 1E+2, "t": true, "f": false}';
    expect(splice(input, ['n', 'm', 'big', 'e', 't', 'f'], 'pass', spy)).toBe(
      '{"n": "<1.0>", "m": "<-0.0>", "big": "<9223372036854775807>", "e": "<1E+2>", "t": "<true>", "f": "<false>"}',
    );
    expect(seen).toEqual(['1.0', '-0.0', '9223372036854775807', '1E+2', 'true', 'false']);
  });

  it('follows nested paths and arrays', () => {
    expect(splice('{"address": {"city": "Bern", "zip": 3000}, "city": "no"}', ['address.city', 'address.zip'])).toBe(
      '{"address": {"city": "<Bern>", "zip": "<3000>"}, "city": "no"}',
    );
    expect(splice('{"cards":[{"number":"1","kind":"x"}, {"number":2}, {"kind":"y"}, null]}', ['cards[].number'])).toBe(
      '{"cards":[{"number":"<1>","kind":"x"}, {"number":"<2>"}, {"kind":"y"}, null]}',
    );
    expect(splice('{"cards":[ ]}', ['cards[].number'], 'dead-letter')).toBe('{"cards":[ ]}');
    expect(splice('{"cards":null}', ['cards[].number'])).toBe('{"cards":null}');
    expect(splice('{}', ['cards[].number'])).toBe('{}');
    expect(splice('{"tags":["a", null, 3, true]}', ['tags[]'])).toBe('{"tags":["<a>", null, "<3>", "<true>"]}');
    expect(splice('{"o":{"l":[{"x":[{"y":"deep"}]}]}}', ['o.l[].x[].y'])).toBe('{"o":{"l":[{"x":[{"y":"<deep>"}]}]}}');
  });

  it('matches keys by their decoded name, escaped or not', () => {
    expect(splice('{"\\u0065mail":"a","caf\\u00e9":"b","café":"c","e\\u006dail2":"d"}', ['email', 'café'])).toBe(
      '{"\\u0065mail":"<a>","caf\\u00e9":"<b>","café":"<c>","e\\u006dail2":"d"}',
    );
    expect(splice('{"emai":"a","emails":"b","Email":"c","e\\"mail":"d"}', ['email'])).toBe('{"emai":"a","emails":"b","Email":"c","e\\"mail":"d"}');
  });

  it('looks keys up only in the mapped objects, not in later siblings at the same depth', () => {
    expect(splice('{"b":{"c":"1"},"a":{"c":"2"},"b2":[{"c":"3"}]}', ['b.c'])).toBe('{"b":{"c":"<1>"},"a":{"c":"2"},"b2":[{"c":"3"}]}');
    expect(splice('{"cards":[{"number":"1"}],"other":[{"number":"2"}]}', ['cards[].number'])).toBe('{"cards":[{"number":"<1>"}],"other":[{"number":"2"}]}');
  });

  it('passes or dead-letters absent and null fields', () => {
    expect(splice('{"a":1}', ['email'])).toBe('{"a":1}');
    expect(splice('{"email":null}', ['email'])).toBe('{"email":null}');
    expect(splice('null', ['email'])).toBe('null');
    expect(splice(' {"address":null} ', ['address.city'])).toBe(' {"address":null} ');
    const absent: [string, string] = ['FIELD_MISSING', 'mapped field email is absent or null'];
    expect(failure('{"a":1}', ['email'], 'dead-letter')).toEqual(absent);
    expect(failure('{"email":null}', ['email'], 'dead-letter')).toEqual(absent);
    expect(failure('null', ['email'], 'dead-letter')).toEqual(absent);
    expect(failure('{"cards":[{"number":"1"},{}]}', ['cards[].number'], 'dead-letter')).toEqual([
      'FIELD_MISSING',
      'mapped field cards[].number is absent or null',
    ]);
    expect(failure('{"cards":null}', ['cards[].number'], 'dead-letter')).toEqual(['FIELD_MISSING', 'mapped field cards[].number is absent or null']);
    expect(failure('{"address":{}}', ['address.city'], 'dead-letter')).toEqual(['FIELD_MISSING', 'mapped field address.city is absent or null']);
  });

  it('refuses a record whose shape contradicts a mapped path', () => {
    const shape = (p: string): [string, string] => ['RECORD_MALFORMED', `the record's shape does not match mapped path ${p}`];
    const noArray = (p: string): [string, string] => ['RECORD_MALFORMED', `the record's shape does not match mapped path ${p} (no array)`];
    const notScalar = (p: string): [string, string] => ['RECORD_MALFORMED', `mapped field ${p} is not a scalar`];
    expect(failure('{"email":{"x":1}}', ['email'])).toEqual(notScalar('email'));
    expect(failure('{"email":[]}', ['email'])).toEqual(notScalar('email'));
    expect(failure('{"tags":[[1]]}', ['tags[]'])).toEqual(notScalar('tags[]'));
    expect(failure('{"address":"Bern"}', ['address.city'])).toEqual(shape('address.city'));
    expect(failure('{"address":[{"city":"x"}]}', ['address.city'])).toEqual(shape('address.city'));
    expect(failure('{"cards":{"number":"1"}}', ['cards[].number'])).toEqual(noArray('cards[].number'));
    expect(failure('{"cards":"1"}', ['cards[].number'])).toEqual(noArray('cards[].number'));
    expect(failure('{"cards":["1"]}', ['cards[].number'])).toEqual(shape('cards[].number'));
    for (const root of ['[]', '[{"email":"a"}]', '"a"', '1', 'true']) expect(failure(root, ['email'])).toEqual(shape('email'));
  });

  it('reports failures in mapping order, like protectRecord', () => {
    // the document has `a` first, but the first mapping is `b`
    expect(failure('{"a":{}, "b":null}', ['b', 'a'], 'dead-letter')).toEqual(['FIELD_MISSING', 'mapped field b is absent or null']);
    expect(failure('{"a":{}, "b":null}', ['a', 'b'], 'dead-letter')).toEqual(['RECORD_MALFORMED', 'mapped field a is not a scalar']);
  });

  it('turns a ValueError into a StreamError with its code and no value', () => {
    const refuse: Chain = () => {
      throw new ValueError('VALUE_TOO_SHORT', 'is shorter than the transformer accepts');
    };
    const [code, message] = failure('{"email":"secret-value"}', ['email'], 'pass', refuse);
    expect(code).toBe('VALUE_TOO_SHORT');
    expect(message).toBe('mapped field email: value is shorter than the transformer accepts');
    expect(message).not.toContain('secret');
    const bug = new TypeError('boom');
    expect(() =>
      splice('{"email":"x"}', ['email'], 'pass', () => {
        throw bug;
      }),
    ).toThrow(bug);
  });

  it('follows a change to a reused mapping list', () => {
    const list = maps(['a']);
    expect(protectJsonBytes(Buffer.from('{"a":"1","b":"2"}'), list, 'pass').toString()).toBe('{"a":"<1>","b":"2"}');
    list[0] = maps(['b'])[0]!;
    expect(protectJsonBytes(Buffer.from('{"a":"1","b":"2"}'), list, 'pass').toString()).toBe('{"a":"1","b":"<2>"}');
    list.push(...maps(['a']));
    expect(protectJsonBytes(Buffer.from('{"a":"1","b":"2"}'), list, 'pass').toString()).toBe('{"a":"<1>","b":"<2>"}');
  });

  it('treats two mappings of one value as a configuration bug', () => {
    expect(() => splice('{"email":"x"}', ['email', 'email'])).toThrow(/maps one field twice/);
    expect(() => splice('{"email":"x"}', ['email', 'email'])).not.toThrow(StreamError);
  });
});

describe('protectJsonBytes rejects what is not JSON', () => {
  // the scanner's own cases (every malformed text and byte sequence) are in test/json-bytes/scan.test.ts
  it.each(['', '{"email":"a"', '{"email":"a",}', '{"a":01}', '{"email":"\\x"}'])('%j as RECORD_MALFORMED, with or without mappings', (text) => {
    expect(failure(text, ['email'])).toEqual(NOT_JSON);
    expect(failure(text, [])).toEqual(NOT_JSON);
  });

  it('refuses invalid UTF-8 in a mapped string, and deep nesting without recursion', () => {
    expect(failure(Buffer.from([...Buffer.from('{"email":"a'), 0xff, ...Buffer.from('"}')]), ['email'])).toEqual(NOT_JSON);
    expect(failure('{"a":'.repeat(100_000), ['a.a.a'])).toEqual(NOT_JSON);
    const deep = `{"email":"x","a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expect(splice(deep, ['email'])).toBe(deep.replace('"x"', '"<x>"'));
  });
});

describe('protectJsonBytes properties', () => {
  it('changes exactly the bytes of the mapped value', () => {
    fc.assert(
      fc.property(valueText, stringText, valueText, fc.array(ws, { minLength: 8, maxLength: 8 }), (x, email, y, w) => {
        const before = `${w[0]}{${w[1]}"x"${w[2]}:${x},"email"${w[3]}:${w[4]}`;
        const after = `${w[5]},${w[6]}"y":${y}${w[7]}}${w[0]}`;
        const input = Buffer.from(before + email + after, 'utf8');
        const decoded = JSON.parse(email) as string;
        const out = protectJsonBytes(
          input,
          maps(['email'], (s) => `P${s}`),
          'dead-letter',
        );
        expect(out.equals(Buffer.from(before + JSON.stringify(`P${decoded}`) + after, 'utf8'))).toBe(true);
        expect(JSON.parse(out.toString('utf8'))).toEqual({ ...(JSON.parse(input.toString('utf8')) as object), email: `P${decoded}` });
      }),
      { numRuns: 500 },
    );
  });

  it('protects like protectRecord on documents without duplicate keys', () => {
    const key = fc.constantFrom('a', 'b', 'c', 'cards', 'number', 'email');
    const { value } = fc.letrec<{ value: unknown; array: unknown; object: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constantFrom(null, true, 'z', 'x'),
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.string(),
        { weight: 2, arbitrary: tie('array') },
        { weight: 3, arbitrary: tie('object') },
      ),
      array: fc.array(tie('value'), { maxLength: 3 }),
      object: fc.dictionary(key, tie('value'), { maxKeys: 4 }),
    }));
    const doc = fc.oneof({ weight: 5, arbitrary: fc.dictionary(key, value, { maxKeys: 6 }) }, { weight: 1, arbitrary: value });
    const paths = fc.shuffledSubarray(['a', 'a.b', 'b.c', 'b.c[].a', 'cards[].number', 'c[]', 'email'], { minLength: 1 });
    const transform: Chain = (s) => {
      if (s.includes('z')) throw new ValueError('VALUE_NOT_IN_ALPHABET', 'holds a character the transformer cannot process');
      return `<${s}>`;
    };
    const outcome = (run: () => unknown) => {
      try {
        return { value: run() };
      } catch (e) {
        if (e instanceof StreamError) return { code: e.code, message: e.message };
        throw e;
      }
    };
    fc.assert(
      fc.property(doc, paths, fc.constantFrom('pass', 'dead-letter') as fc.Arbitrary<'pass' | 'dead-letter'>, (d, p, missing) => {
        const text = JSON.stringify(d);
        const expected = outcome(() => {
          const parsed: unknown = JSON.parse(text);
          protectRecord(parsed, maps(p, transform), missing);
          return parsed;
        });
        const actual = outcome(() => JSON.parse(protectJsonBytes(Buffer.from(text, 'utf8'), maps(p, transform), missing).toString('utf8')));
        expect(actual).toEqual(expected);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('protectJsonBytes on a typical record', () => {
  it('gives the same bytes on every call with a reused mapping list (non-timed sanity check)', () => {
    const filler = Array.from(
      { length: 12 },
      (_, i) => `"field${i}": {"id": ${9007199254740993 + i}, "label": "label \\u00e9 ${i}", "ok": true, "ratio": 0.50}`,
    ).join(', ');
    const input = Buffer.from(`{"email": "someone@example.com", "name": "Some One", ${filler}, "address": {"city": "Bern"}}`, 'utf8');
    const m = maps(['email', 'name', 'address.city']);
    const first = protectJsonBytes(input, m, 'dead-letter');
    expect(input.length).toBeGreaterThan(900);
    expect(first.toString('utf8')).toBe(
      input.toString('utf8').replace('"someone@example.com"', '"<someone@example.com>"').replace('"Some One"', '"<Some One>"').replace('"Bern"', '"<Bern>"'),
    );
    for (let i = 0; i < 2000; i++) expect(protectJsonBytes(input, m, 'dead-letter').equals(first)).toBe(true);
  });
});
