import fc from 'fast-check';
import { isNotJson } from '../../src/json-bytes/errors.ts';
import { describe, expect, it } from 'vitest';
import { compileExpectation, type JsonPath } from '../../src/json-bytes/paths.ts';
import {
  EV_MISSING,
  EV_NO_ARRAY,
  EV_NOT_SCALAR,
  EV_RAW,
  EV_SHAPE,
  EV_STRING,
  leafText,
  scanJson,
  TRAIT_AT,
  TRAIT_DIGIT,
  TRAIT_ESCAPE,
  type UnmappedVisitor,
} from '../../src/json-bytes/scan.ts';
import { valueText } from '../helpers/json-text.ts';

/** `a.b[*].c` as a JsonPath (test shorthand: dots, and [*] after a key or alone) */
function path(text: string): JsonPath {
  return text.split('.').flatMap((part) => {
    const name = part.replace(/(\[\*\])+$/, '');
    const each = (part.length - name.length) / 3;
    return [...(name ? [{ kind: 'key' as const, name }] : []), ...Array.from({ length: each }, () => ({ kind: 'each' as const }))];
  });
}

/** scan events as [path index, kind, text of the span or null] */
function scan(input: string | Buffer, paths: string[]): [number, number, string | null][] {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const events: number[] = [];
  scanJson(bytes, compileExpectation(paths.map(path)), events);
  const out: [number, number, string | null][] = [];
  for (let k = 0; k < events.length; k += 4) {
    const kind = events[k + 1]!;
    out.push([events[k]!, kind, kind === EV_STRING || kind === EV_RAW ? leafText(bytes, kind, events[k + 2]!, events[k + 3]!) : null]);
  }
  return out;
}

/** a visitor that sees everything and does nothing: strings are then scanned with their traits */
const NOOP: UnmappedVisitor = { value() {}, key() {} };

function rejects(input: string | Buffer, paths: string[], visitor?: UnmappedVisitor): boolean {
  try {
    if (visitor) scanJson(typeof input === 'string' ? Buffer.from(input, 'utf8') : input, compileExpectation(paths.map(path)), [], 0, visitor);
    else scan(input, paths);
    return false;
  } catch (e) {
    if (isNotJson(e)) return true;
    throw e;
  }
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

describe('scanJson into a reused event list', () => {
  it('writes from the index given and returns the end; stale entries past it are not events', () => {
    const root = compileExpectation([path('a'), path('b'), path('c')]);
    const events: number[] = [];
    expect(scanJson(Buffer.from('{"a":"1","b":2,"c":true}'), root, events)).toBe(12);
    const end = scanJson(Buffer.from('{"b":"x"}'), root, events);
    // b found, a and c missing (reported when the object closes)
    expect(end).toBe(12);
    expect([events[0], events[1], events[4], events[5], events[8], events[9]]).toEqual([1, EV_STRING, 0, EV_MISSING, 2, EV_MISSING]);
    expect(scanJson(Buffer.from('[]'), root, events)).toBe(12);
    expect(scanJson(Buffer.from('{"c":1}'), root, events, 12)).toBe(24);
    expect(events.slice(12, 14)).toEqual([2, EV_RAW]);
    // a syntax error part-way leaves the next scan unaffected
    expect(() => scanJson(Buffer.from('{"a":"1",'), root, events)).toThrow(expect.objectContaining({ name: 'JsonBytesFault', code: 'JSON_SYNTAX' }));
    expect(scanJson(Buffer.from('{"a":"z","b":"y","c":"x"}'), root, events)).toBe(12);
    expect([events[0], events[4], events[8]]).toEqual([0, 1, 2]);
  });
});

describe('scanJson reports where paths land', () => {
  it('reports strings decoded, numbers and booleans as written, in document order', () => {
    const doc = '{"a": "x\\u00e9", "n": 12345678901234567890, "f": 1.0, "t": true, "list": [{"c": "1"}, {"c": "2"}]}';
    expect(scan(doc, ['a', 'n', 'f', 't', 'list[*].c'])).toEqual([
      [0, EV_STRING, 'x\u00e9'],
      [1, EV_RAW, '12345678901234567890'],
      [2, EV_RAW, '1.0'],
      [3, EV_RAW, 'true'],
      [4, EV_STRING, '1'],
      [4, EV_STRING, '2'],
    ]);
  });

  it('reports absent and null places, and shapes that contradict a path', () => {
    expect(scan('{"a": null}', ['a', 'b'])).toEqual([
      [0, EV_MISSING, null],
      [1, EV_MISSING, null],
    ]);
    expect(scan('{"a": "s", "b": {"c": 1}, "d": {}}', ['a.x', 'b', 'd[*]'])).toEqual([
      [0, EV_SHAPE, null],
      [1, EV_NOT_SCALAR, null],
      [2, EV_NO_ARRAY, null],
    ]);
  });

  it('matches keys by their decoded name, and reports every occurrence of a duplicate key', () => {
    expect(scan('{"\\u0065mail": "a", "email": "b"}', ['email'])).toEqual([
      [0, EV_STRING, 'a'],
      [0, EV_STRING, 'b'],
    ]);
  });

  it('follows top-level arrays and nested fan-out', () => {
    expect(scan('[{"e": "a"}, {"e": "b"}]', ['[*].e']).map((e) => e[2])).toEqual(['a', 'b']);
    expect(scan('{"m": [["a", "b"], ["c"]]}', ['m[*][*]']).map((e) => e[2])).toEqual(['a', 'b', 'c']);
  });

  it('only validates without paths', () => {
    expect(compileExpectation([])).toBeNull();
    expect(scan('{"a": [1, {"b": "c"}]}', [])).toEqual([]);
    expect(() => compileExpectation([[]])).toThrow(/no steps/);
  });
});

describe('scanJson rejects what is not JSON', () => {
  const texts = [
    '',
    '   ',
    '{"email":"a"',
    '{"email":"a"} x',
    '{"email":"a"}}',
    '{"email":"a",}',
    '[1,]',
    '[1 2]',
    '{,}',
    '{"a" 1}',
    '{"a":1 "b":2}',
    ']',
    "{'email':'a'}",
    '{"email":"\\x"}',
    '{"email":"\\u12G4"}',
    '{"email":"\\u12"}',
    '{"email":"a\u0001"}',
    '{"a":"\u001f"}',
    '{"email":"a\tb"}',
    '{"email":"a\nb"}',
    '{"a":01}',
    '{"a":NaN}',
    '{"a":-}',
    '{"a":1.}',
    '{"a":.5}',
    '{"a":1e}',
    '{"a":+1}',
    '{"a":tru}',
    '{"a":nul}',
    '{"a":Infinity}',
    '{"a":1}\u00a0',
    '{"a":"x"',
    '{"email":"x\\"}',
    '{"a"}',
    '{"a":}',
    '{1:2}',
    '[',
    '"',
    'truex',
  ];
  it.each(texts)('%j', (text) => {
    expect(parses(text)).toBe(false);
    expect(rejects(text, ['email'])).toBe(true);
    expect(rejects(text, [])).toBe(true);
    expect(rejects(text, [], NOOP)).toBe(true);
  });

  const bytes: [string, Buffer][] = [
    ['invalid UTF-8 in a mapped string', Buffer.from([...Buffer.from('{"email":"a'), 0xff, ...Buffer.from('"}')])],
    ['invalid UTF-8 in an unmapped string', Buffer.from([...Buffer.from('{"x":"'), 0xc3, 0x28, ...Buffer.from('","email":"a"}')])],
    ['an overlong encoding', Buffer.from([...Buffer.from('{"x":"'), 0xc0, 0xaf, ...Buffer.from('"}')])],
    ['a lone surrogate', Buffer.from([...Buffer.from('{"x":"'), 0xed, 0xa0, 0x80, ...Buffer.from('"}')])],
    ['a truncated sequence', Buffer.from([...Buffer.from('{"x":"'), 0xe2, 0x82, ...Buffer.from('"}')])],
    ['a byte order mark', Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"email":"a"}')])],
    ['a non-ASCII byte outside strings', Buffer.from('{"a":1é}')],
  ];
  it.each(bytes)('%s', (_name, input) => {
    expect(rejects(input, ['email'])).toBe(true);
    expect(rejects(input, [])).toBe(true);
    expect(rejects(input, [], NOOP)).toBe(true);
  });

  it('handles deep nesting without recursion', () => {
    expect(rejects('['.repeat(100_000), ['email'])).toBe(true);
    expect(rejects('{"a":'.repeat(100_000), ['a.a.a'])).toBe(true);
    const deep = `{"email":"x","a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expect(parses(deep)).toBe(true);
    expect(scan(deep, ['email'])).toEqual([[0, EV_STRING, 'x']]);
  });
});

describe('scanJson against JSON.parse', () => {
  it('accepts exactly what JSON.parse accepts', () => {
    const alphabet = fc.constantFrom(...'{}[]:,"\\ \n0123456789-+.eEtruefalsnu/', '\u0001', '\u001f', 'é', "'");
    const mutated = fc
      .tuple(valueText, fc.array(fc.tuple(fc.nat(), fc.constantFrom('insert', 'delete', 'replace'), alphabet), { minLength: 1, maxLength: 3 }))
      .map(([text, edits]) =>
        edits.reduce((t, [at, op, c]) => {
          const i = t.length === 0 ? 0 : at % t.length;
          return op === 'insert' ? t.slice(0, i) + c + t.slice(i) : op === 'delete' ? t.slice(0, i) + t.slice(i + 1) : t.slice(0, i) + c + t.slice(i + 1);
        }, text),
      );
    const texts = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: alphabet }), valueText, mutated);
    fc.assert(
      fc.property(texts, (text) => {
        // Buffer.from replaces lone surrogates, so the bytes are valid UTF-8 and mean `decoded`
        const bytes = Buffer.from(text, 'utf8');
        const decoded = bytes.toString('utf8');
        expect(!rejects(bytes, [])).toBe(parses(decoded));
        // with a visitor strings are scanned by the traits-gathering loop: the same verdict
        expect(!rejects(bytes, [], NOOP)).toBe(parses(decoded));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('the traits of a visited string', () => {
  /** the traits the scanner reports for every string value and key, beside the ones read off its raw bytes */
  function traitsOf(text: string): [number, number][] {
    const bytes = Buffer.from(text, 'utf8');
    const out: [number, number][] = [];
    const expected = (start: number, end: number) => {
      const raw = bytes.subarray(start + 1, end - 1).toString('latin1');
      // digits and @ as written, outside escapes (an escape's hex digits are not the string's)
      const bare = raw.replace(/\\(u[0-9a-fA-F]{4}|.)/g, '');
      return (/[0-9]/.test(bare) ? TRAIT_DIGIT : 0) | (bare.includes('@') ? TRAIT_AT : 0) | (raw.includes('\\') ? TRAIT_ESCAPE : 0);
    };
    scanJson(bytes, null, [], 0, {
      value(b, kind, start, end, place) {
        if (kind === EV_STRING) out.push([place.stringTraits(), expected(start, end)]);
      },
      key(b, start, end, place) {
        out.push([place.stringTraits(), expected(start, end)]);
      },
    });
    return out;
  }

  it('says whether it holds a digit, an @ or an escape, as its raw bytes do', () => {
    expect(traitsOf('{"a1":"x@y","plain":["word","9","\\u0040","é€","[^_`{}~]"]}').map(([got]) => got)).toEqual([
      TRAIT_DIGIT,
      TRAIT_AT,
      0,
      0,
      TRAIT_DIGIT,
      TRAIT_ESCAPE,
      0,
      0,
    ]);
    const texts = fc.oneof(
      valueText,
      fc
        .dictionary(fc.string({ unit: fc.constantFrom(...'aZ09@\\"/ é[]^_`{~\u007f') }), fc.string({ unit: fc.constantFrom(...'aZ09@ é[]^_`{~') }))
        .map((o) => JSON.stringify(o)),
    );
    fc.assert(
      fc.property(texts, (text) => {
        for (const [got, want] of traitsOf(text)) expect(got).toBe(want);
      }),
      { numRuns: 2000 },
    );
  });
});
