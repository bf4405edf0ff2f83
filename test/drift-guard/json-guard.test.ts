import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allowedPath, JsonGuard, parentContext, quietPath, type UnmappedFinding } from '../../src/drift-guard/json-guard.ts';
import { compileExpectation } from '../../src/json-bytes/paths.ts';
import { unmappedKeyKind, unmappedKeyKindOfBytes, unmappedValueKind } from '../../src/drift-guard/value-kinds.ts';
import { EV_RAW, EV_STRING, keyText, leafText, scanJson, type UnmappedVisitor } from '../../src/json-bytes/scan.ts';

/** JSON text of a tree, its strings written with \u escapes where `escape` says (a key or value may hide an @ or digits in them) */
type Tree = string | number | boolean | null | Tree[] | { [k: string]: Tree };
function write(t: Tree, escape: (c: string) => boolean): string {
  if (typeof t === 'string') return quoted(t, escape);
  if (Array.isArray(t)) return `[${t.map((x) => write(x, escape)).join(',')}]`;
  if (t !== null && typeof t === 'object')
    return `{${Object.entries(t)
      .map(([k, v]) => `${quoted(k, escape)}:${write(v, escape)}`)
      .join(',')}}`;
  return JSON.stringify(t);
}
function quoted(s: string, escape: (c: string) => boolean): string {
  return `"${[...s].map((c) => (escape(c) && c.length === 1 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : JSON.stringify(c).slice(1, -1))).join('')}"`;
}

/**
 * What the guard must find, without any of its shortcuts: every string value and every integer
 * of 5 or more characters checked by unmappedValueKind under the name of the key naming it (its
 * own, or its array's) and its parent's, every key by unmappedKeyKind.
 */
function reference(bytes: Buffer): Pick<UnmappedFinding, 'kind' | 'start' | 'end' | 'key'>[] {
  const out: Pick<UnmappedFinding, 'kind' | 'start' | 'end' | 'key'>[] = [];
  const visitor: UnmappedVisitor = {
    value(b, kind, start, end, place) {
      if (kind !== EV_STRING && !(kind === EV_RAW && /^[0-9]+$/.test(b.toString('latin1', start, end)))) return;
      const keyStart = place.keyStart();
      const name = keyStart < 0 ? '' : keyText(b, keyStart, place.keyEnd());
      const found = unmappedValueKind(leafText(b, kind, start, end), name, undefined, undefined, () => parentContext(place.steps()));
      if (found) out.push({ kind: found, start, end, key: false });
    },
    key(b, start, end) {
      const found = unmappedKeyKind(keyText(b, start, end));
      if (found) out.push({ kind: found, start, end, key: true });
    },
  };
  scanJson(bytes, null, [], 0, visitor);
  return out;
}

const KEYS = [
  'note',
  'name',
  'lastName',
  'firstName',
  'surname',
  'cardholder',
  'phone',
  'mobile',
  'dob',
  'birthDate',
  'email',
  'ssn',
  'city',
  'tags',
  'x',
  'prénom',
  'Name',
  'address',
  'street',
  'addressLine1',
  'hotelAddress',
  'ann@example.com',
  'AB123456C',
  '4111111111111111',
  'GB82WEST12345698765432',
];
const PERSONAL = [
  'Ann Lee',
  'Jean-Luc Picard',
  'ann@example.com',
  'a.b+c@example.co.uk',
  '4111111111111111',
  '4111 1111 1111 1111',
  'GB82WEST12345698765432',
  'AB123456C',
  '+44 20 7946 0958',
  '020 7946 0958',
  '123-45-6789',
  '123456789',
  '1990-04-12',
  '12/04/1990',
  '1 85 05 78 006 084 36',
  '12 Long Street',
  '221B Baker Street, London',
  'Flat 3, 7 Rue de la Paix',
];
const WORDS = fc.string({ unit: fc.constantFrom(...'abcXYZ é-.,@+0129'), maxLength: 30 });
const leaf = fc.oneof(fc.constantFrom(...PERSONAL), WORDS, fc.integer(), fc.constant(4111111111111111), fc.boolean(), fc.constant(null));
const tree = fc.letrec<{ node: Tree }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('node'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.constantFrom(...KEYS), WORDS), tie('node'), { maxKeys: 5 }),
  ),
})).node;

describe('the unmapped guard over JSON bytes (JsonGuard)', () => {
  it("finds exactly what its detectors find on every value and key, its shortcuts (the scanner's string traits, shape gates, key hints) changing nothing", () => {
    const escapes = fc.constantFrom<(c: string) => boolean>(
      () => false,
      (c) => c === '@',
      (c) => /[0-9]/.test(c),
      (c) => /[a-z@0-9]/.test(c),
    );
    fc.assert(
      fc.property(tree, escapes, (t, escape) => {
        const bytes = Buffer.from(write(t, escape), 'utf8');
        const guard = new JsonGuard([], false, 10_000);
        guard.begin();
        scanJson(bytes, null, [], 0, guard);
        expect(guard.findings.map(({ kind, start, end, key }) => ({ kind, start, end, key }))).toEqual(reference(bytes));
      }),
      { numRuns: 3000 },
    );
  });

  it('finds under an allow-list compiled into the scan (quiet) exactly what it finds checking the list itself', () => {
    const allow = fc.array(fc.constantFrom('address', 'tags', 'note', 'x', 'tags[]', 'x.street', 'x[].note', 'Name'), { maxLength: 3 });
    fc.assert(
      fc.property(tree, allow, fc.boolean(), (t, entries, fold) => {
        const bytes = Buffer.from(
          write(t, () => false),
          'utf8',
        );
        const found = (quiet: boolean) => {
          const guard = new JsonGuard(entries.map(allowedPath), fold, 10_000);
          guard.begin();
          scanJson(bytes, quiet ? compileExpectation([], { foldKeys: fold, quiet: entries.map((e) => quietPath(allowedPath(e))) }) : null, [], 0, guard);
          return guard.findings.map(({ path, kind, start, end, key }) => ({ path, kind, start, end, key }));
        };
        expect(found(true)).toEqual(found(false));
      }),
      { numRuns: 2000 },
    );
  });

  it("finds a person's name in a field named so, and nothing in plain words elsewhere", () => {
    const bytes = Buffer.from('{"lastName":"Lee-Smith","note":"standard delivery","tags":["Ann Lee"],"surname":["Ann Lee"]}');
    const guard = new JsonGuard([], true);
    guard.begin();
    scanJson(bytes, null, [], 0, guard);
    expect(guard.findings.map((f) => [f.path, f.kind])).toEqual([
      ['lastName', 'person-name'],
      ['surname[]', 'person-name'],
    ]);
  });

  it("checks a record key's bytes as its decoded text (unmappedKeyKindOfBytes)", () => {
    const text = fc.oneof(
      fc.constantFrom(...PERSONAL, ...KEYS),
      WORDS,
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.tuple(fc.string({ unit: fc.constantFrom('é', '€', '😀'), maxLength: 120 }), fc.constantFrom(...PERSONAL)).map(([pad, v]) => pad + v),
    );
    fc.assert(
      fc.property(text, (t) => {
        const bytes = Buffer.from(t, 'utf8');
        expect(unmappedKeyKindOfBytes(bytes)).toBe(unmappedKeyKind(bytes.toString('utf8')));
      }),
      { numRuns: 3000 },
    );
    expect(unmappedKeyKindOfBytes(Buffer.from('ann@example.com'))).toBe('email');
    expect(unmappedKeyKindOfBytes(Buffer.from('k12345'))).toBeUndefined();
  });
});
