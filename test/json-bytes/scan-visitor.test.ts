import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileExpectation, type JsonPath } from '../../src/json-bytes/paths.ts';
import {
  EV_RAW,
  EV_STRING,
  keyText,
  leafText,
  scanJson,
  TRAIT_AT,
  TRAIT_DIGIT,
  TRAIT_ESCAPE,
  type ScanPlace,
  type UnmappedVisitor,
} from '../../src/json-bytes/scan.ts';

/** `a.b[].c` as a JsonPath */
function path(text: string): JsonPath {
  return text
    .split('.')
    .flatMap((part) =>
      part.endsWith('[]') ? [{ kind: 'key' as const, name: part.slice(0, -2) }, { kind: 'each' as const }] : [{ kind: 'key' as const, name: part }],
    );
}

interface Visit {
  text: string;
  /** the key naming the value (its own, or its array's), as the place tells it */
  key: string | null;
  steps: (string | null)[];
}

/** every value and key the scanner shows a visitor, with the place it tells */
function visits(
  json: string,
  paths: string[] = [],
  options: { quiet?: string[]; foldKeys?: boolean; keyTraits?: number } = {},
): { values: Visit[]; keys: string[] } {
  const bytes = Buffer.from(json, 'utf8');
  const values: Visit[] = [];
  const keys: string[] = [];
  const named = (b: Buffer, place: ScanPlace) => (place.keyStart() < 0 ? null : keyText(b, place.keyStart(), place.keyEnd()));
  const visitor: UnmappedVisitor = {
    value(b, kind, start, end, place) {
      values.push({ text: leafText(b, kind === EV_STRING ? EV_STRING : EV_RAW, start, end), key: named(b, place), steps: place.steps() });
    },
    key(b, start, end) {
      keys.push(keyText(b, start, end));
    },
    ...(options.keyTraits === undefined ? {} : { keyTraits: options.keyTraits }),
  };
  const root = compileExpectation(paths.map(path), { foldKeys: options.foldKeys === true, ...(options.quiet ? { quiet: options.quiet.map(path) } : {}) });
  scanJson(bytes, root, [], 0, visitor);
  return { values, keys };
}

type Tree = string | number | Tree[] | { [k: string]: Tree };

/** the scalars of a parsed tree in document order, each with the key of the nearest object above it (null at the top) */
function expectedKeys(t: Tree, key: string | null = null): { text: string; key: string | null }[] {
  if (Array.isArray(t)) return t.flatMap((x) => expectedKeys(x, key));
  if (typeof t === 'object') return Object.entries(t).flatMap(([k, v]) => expectedKeys(v, k));
  return [{ text: String(t), key }];
}

describe('what a visitor is told of each place', () => {
  it('names each value by the key of the nearest object holding it, however deep the containers nest and close', () => {
    // keys of letters only: JSON.parse keeps their order, so the expected walk is document order
    const name = fc.string({ unit: fc.constantFrom(...'abcé'), minLength: 1, maxLength: 4 });
    const tree = fc.letrec<{ node: Tree }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.string({ unit: fc.constantFrom(...'xy1'), maxLength: 3 }),
        fc.nat(),
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(name, tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    fc.assert(
      fc.property(tree, (t) => {
        expect(visits(JSON.stringify(t)).values.map(({ text, key }) => ({ text, key }))).toEqual(expectedKeys(t));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps track past the nesting its first buffers hold', () => {
    const deep = `${'{"k":['.repeat(200)}"v"${']}'.repeat(200)}`;
    expect(visits(`{"top":${deep},"after":"w"}`).values.map((v) => [v.text, v.key])).toEqual([
      ['v', 'k'],
      ['w', 'after'],
    ]);
  });

  it("counts a string's digits as written, outside escapes", () => {
    const seen: [number, number][] = [];
    scanJson(Buffer.from('{"a1b22":["x","12-34","\\u0031","9 Long Street 10"]}'), null, [], 0, {
      value(b, kind, start, end, place) {
        seen.push([place.stringDigits(), place.stringTraits()]);
      },
      key(b, start, end, place) {
        seen.push([place.stringDigits(), place.stringTraits()]);
      },
    });
    expect(seen).toEqual([
      [3, TRAIT_DIGIT],
      [0, 0],
      [4, TRAIT_DIGIT],
      [0, TRAIT_ESCAPE],
      [3, TRAIT_DIGIT],
    ]);
  });

  it('compares a step with a key on its bytes, folded or not, escapes decoded', () => {
    const steps: boolean[] = [];
    const name = (n: string, folded = false) => ({ name: n, bytes: Buffer.from(n), ...(folded ? { folded } : {}) });
    scanJson(Buffer.from('{"Address":[{"stre\\u0065t":"12 Long Street"}]}'), null, [], 0, {
      value(b, kind, start, end, place) {
        steps.push(
          place.stepIs(0, name('Address')),
          place.stepIs(0, name('address')),
          place.stepIs(0, name('address', true)),
          place.stepIs(1, null),
          place.stepIs(1, name('0')),
          place.stepIs(2, name('street')),
          place.stepIs(2, null),
        );
      },
      key() {},
    });
    expect(steps).toEqual([true, false, true, true, false, true, false]);
  });
});

describe('keys a visitor asks for', () => {
  it('shows only the keys holding one of its traits, and every key without keyTraits', () => {
    const json = '{"plain":1,"a1":2,"x@y":3,"\\u0041":{"inner":4}}';
    expect(visits(json).keys).toEqual(['plain', 'a1', 'x@y', 'A', 'inner']);
    expect(visits(json, [], { keyTraits: TRAIT_DIGIT | TRAIT_AT | TRAIT_ESCAPE }).keys).toEqual(['a1', 'x@y', 'A']);
    expect(visits(json, [], { keyTraits: TRAIT_AT }).keys).toEqual(['x@y']);
    // the place is still told right after keys it was not shown
    expect(visits(json, [], { keyTraits: TRAIT_AT }).values.map((v) => v.key)).toEqual(['plain', 'a1', 'x@y', 'inner']);
  });
});

describe('quiet paths', () => {
  const doc = '{"id":1,"address":{"street":"12 Long Street","lines":["a","b"]},"items":[{"sku":"S-1","note":"n"},{"sku":"S-2"}],"x@y":"k"}';

  it('show the visitor nothing under them, not even their own key', () => {
    const { values, keys } = visits(doc, [], { quiet: ['address', 'items[].sku'] });
    expect(values.map((v) => v.text)).toEqual(['1', 'n', 'k']);
    expect(keys).toEqual(['id', 'items', 'note', 'x@y']);
  });

  it('match keys as mapped paths do: folded when keys fold, escapes decoded, every duplicate', () => {
    expect(
      visits('{"ADDRESS":{"a":"1"},"addr\\u0065ss":{"b":"2"},"address":{"c":"3"},"other":"4"}', [], { quiet: ['address'] }).values.map((v) => v.text),
    ).toEqual(['1', '4']);
    expect(
      visits('{"ADDRESS":{"a":"1"},"addr\\u0065ss":{"b":"2"},"address":{"c":"3"},"other":"4"}', [], { quiet: ['address'], foldKeys: true }).values.map(
        (v) => v.text,
      ),
    ).toEqual(['4']);
  });

  it('change no event of a mapped path, under them or beside them', () => {
    const events = (quiet?: string[]) => {
      const out: number[] = [];
      const n = scanJson(
        Buffer.from(doc),
        compileExpectation(['address.street', 'items[].note', 'missing'].map(path), quiet ? { quiet: quiet.map(path) } : {}),
        out,
        0,
        { value() {}, key() {} },
      );
      return out.slice(0, n);
    };
    expect(events(['address', 'items[].sku', 'missing.deeper'])).toEqual(events());
    expect(events()).not.toEqual([]);
  });

  it('quiet alone still make a tree: the scan shows everything else', () => {
    expect(visits('{"a":"1","b":{"c":"2"}}', [], { quiet: ['b'] }).values.map((v) => v.text)).toEqual(['1']);
  });
});
