// The native core's JSON scanner (native/src/json_scan.rs) fuzzed against src/json-bytes' scanner,
// its oracle: random documents (nested objects and arrays, duplicate keys, keys in every case and
// with escapes, lone surrogates, numbers in every form) and random mapped paths (with [] steps,
// keys folded or not), then the same documents broken a byte at a time. Valid JSON: the same events;
// anything else: both refuse. `npm run test:native-differential` runs 1,000,000 documents.
import { describe, expect, it } from 'vitest';
import { compileExpectation, type JsonPath } from '../../src/json-bytes/paths.ts';
import { scanJson } from '../../src/json-bytes/scan.ts';
import { nativeJsonScanner } from '../../src/native/index.ts';
import { mulberry32 } from '../helpers/seeded-random.ts';

const DOCS = Number(process.env.VEIL_NATIVE_SCAN_DOCS ?? 20_000);
/** the names paths look up, and the keys documents hold: the names in other cases, escaped, folded kin (ſ, K), non-ASCII */
const NAMES = ['email', 'name', 'card', 'number', 'k', 's', 'é', 'straße', 'ß', 'İd', 'a"b', 'x y', ''];
const KEYS = [...NAMES, 'EMAIL', 'Email', 'NAME', 'Card', 'ſ', '\u212a', 'É', 'STRASSE', 'Straße', 'ss', 'i̇d', 'other', '\ud800', 'é'.normalize('NFD')];
const STRINGS = ['', 'a@example.org', '4111 1111 1111 1111', 'é', '\u2028', '"', '\\', '\ud83d\ude00', 'tab\there', '\u0000'];
const NUMBERS = ['0', '-0', '1', '-12', '1.5', '0.25e10', '1E-7', '-0.0e+0', '123456789012345678901234567890', '2e308'];
const BREAKERS = ['{', '}', '[', ']', ',', ':', '"', '\\', '0', '-', 'e', '.', ' ', 'n', 'u', '\x01', '\x7f'];

describe('the native core: JSON scanner against src/json-bytes (issue 42)', () => {
  it(`reports the same events on ${DOCS} random documents and refuses what the JavaScript scanner refuses, on the same documents broken`, () => {
    const random = mulberry32(Number(process.env.VEIL_NATIVE_SCAN_SEED ?? 7));
    const int = (n: number) => Math.floor(random() * n);
    const pick = <T>(list: readonly T[]): T => list[int(list.length)]!;
    const tally = { docs: 0, valid: 0, refused: 0, events: 0, disagreeing: 0, disagreements: [] as string[] };
    while (tally.docs < DOCS) {
      const paths: JsonPath[] = Array.from({ length: 1 + int(4) }, () =>
        Array.from({ length: 1 + int(3) }, () => (random() < 0.25 ? { kind: 'each' as const } : { kind: 'key' as const, name: pick(NAMES) })),
      );
      const fold = random() < 0.5;
      const root = compileExpectation(paths, { foldKeys: fold });
      const native = nativeJsonScanner(root);
      const docs = Array.from({ length: 50 }, () => {
        const text = doc(3);
        if (random() < 0.4) return Buffer.from(text, 'utf8');
        return broken(Buffer.from(text, 'utf8'));
      });
      const found = native.scanMany(docs);
      docs.forEach((d, i) => {
        const expected = oracle(d, root);
        const got = found[i] === 'not JSON' ? 'not JSON' : Array.from(found[i]!);
        if (expected === 'not JSON') tally.refused++;
        else {
          tally.valid++;
          tally.events += expected.length / 4;
        }
        if (JSON.stringify(got) === JSON.stringify(expected)) return;
        tally.disagreeing++;
        if (tally.disagreements.length < 5)
          tally.disagreements.push(
            `paths ${JSON.stringify(paths)} fold ${fold} doc ${JSON.stringify(d.toString('latin1'))}: native ${JSON.stringify(got)}, JS ${JSON.stringify(expected)}`,
          );
      });
      tally.docs += docs.length;
    }
    console.log(
      `native JSON scanner: ${tally.docs} documents (${tally.valid} valid JSON with ${tally.events} events, ${tally.refused} refused), ${tally.disagreeing} disagreements`,
    );
    expect(tally.disagreements).toEqual([]);
    expect(tally.valid).toBeGreaterThan(DOCS / 4);
    expect(tally.refused).toBeGreaterThan(DOCS / 4);

    /** a random JSON text: nested containers, duplicate keys, keys written with escapes, any whitespace */
    function doc(depth: number): string {
      const ws = () => pick(['', '', ' ', '\n', '\t ', '\r\n']);
      const r = random();
      if (depth > 0 && r < 0.35) {
        const keys = Array.from({ length: int(5) }, () => pick(KEYS));
        if (keys.length && random() < 0.15) keys.push(keys[0]!);
        return `{${ws()}${keys.map((k) => `${key(k)}${ws()}:${ws()}${doc(depth - 1)}`).join(`${ws()},${ws()}`)}${ws()}}`;
      }
      if (depth > 0 && r < 0.55) return `[${ws()}${Array.from({ length: int(4) }, () => doc(depth - 1)).join(`,${ws()}`)}${ws()}]`;
      if (r < 0.75) return key(pick(STRINGS));
      if (r < 0.9) return pick(NUMBERS);
      return pick(['true', 'false', 'null']);
    }

    /** a JSON string of `s`, some characters written as \u escapes (either hex case) */
    function key(s: string): string {
      const plain = JSON.stringify(s);
      if (random() < 0.6) return plain;
      let out = '"';
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        const hex = c.toString(16).padStart(4, '0');
        out += random() < 0.3 || c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff) ? `\\u${random() < 0.5 ? hex : hex.toUpperCase()}` : s[i];
      }
      return `${out}"`;
    }

    /** the document broken: a byte removed, inserted or replaced, cut short, or a UTF-8 sequence spoiled */
    function broken(b: Buffer): Buffer {
      const at = int(b.length + 1);
      switch (int(5)) {
        case 0:
          return Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
        case 1:
          return Buffer.concat([b.subarray(0, at), Buffer.from(pick(BREAKERS), 'latin1'), b.subarray(at)]);
        case 2:
          return Buffer.concat([b.subarray(0, at), Buffer.from(pick(BREAKERS), 'latin1'), b.subarray(at + 1)]);
        case 3:
          return b.subarray(0, at);
        default:
          return Buffer.concat([b.subarray(0, at), Buffer.from([pick([0x80, 0xc0, 0xed, 0xf5, 0xff])]), b.subarray(at)]);
      }
    }
  }, 600_000);
});

function oracle(d: Buffer, root: ReturnType<typeof compileExpectation>): number[] | 'not JSON' {
  const events: number[] = [];
  try {
    return events.slice(0, scanJson(d, root, events));
  } catch {
    return 'not JSON';
  }
}
