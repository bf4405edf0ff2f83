import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createTransformer, JS_PRIMITIVES, MemoryKeyProvider, type KeyType, type Primitives, type StepConfig } from '../../src/engine/index.ts';
import { nativePrimitives } from '../../src/native/index.ts';
import { computeGolden, goldenSteps, type GoldenRecord } from '../golden/golden-cases.ts';
import { mulberry32 } from '../helpers/seeded-random.ts';

const pinned = JSON.parse(readFileSync(new URL('../golden/outputs.json', import.meta.url), 'utf8')) as GoldenRecord[];

/** a batch's answers as comparable text: each output, or the code of the ValueError it was refused with */
const answers = (results: readonly (string | { code: string })[]) => results.map((r) => (typeof r === 'string' ? r : `error ${r.code}`));

describe('the engine on the native core (nativePrimitives, issue 42)', () => {
  it('writes every golden output byte for byte, and reads every pinned one back', () => {
    const native = nativePrimitives();
    expect(computeGolden(native)).toEqual(pinned);
    const steps = new Map(goldenSteps(native).map((s) => [s.name, s.transformer]));
    const reversible = pinned.filter((r) => steps.get(r.step)!.reversible);
    for (const record of reversible) expect(steps.get(record.step)!.bind(record).unprotect(record.protected), record.step).toBe(record.value);
    expect(reversible.length).toBeGreaterThan(20);
  });

  const STEPS: [string, KeyType, number, Record<string, unknown>][] = [
    ['aes-siv', 'aes-siv', 64, {}],
    ['aes-gcm', 'aes-gcm', 32, {}],
    ['hmac-sha256, 20-byte pseudonyms', 'hmac-sha256', 32, { outputBytes: 20 }],
    ['ff1 digits, Luhn, last 4 kept', 'ff1', 32, { alphabet: 'digits', keepFirst: 0, keepLast: 4, luhn: true }],
    ['ff1 alnum, 2 kept each side', 'ff1', 24, { alphabet: 'alnum', keepFirst: 2, keepLast: 2, luhn: false }],
    ['ff3-1 digits', 'ff3-1', 16, { alphabet: 'digits', keepFirst: 0, keepLast: 0 }],
  ];

  it.each(STEPS)(
    '%s: the same answers as the JavaScript engine on random batches (outputs and refusals), and each reads the other’s outputs',
    (_name, type, keyBytes, params) => {
      const random = mulberry32(7);
      const int = (n: number) => Math.floor(random() * n);
      const key = randomBytes(keyBytes);
      const build = (primitives: Primitives) => {
        const keys = new MemoryKeyProvider();
        keys.add('k', type, new Uint8Array(key), 'now');
        // the same nonces on both sides: GCM's outputs compare byte for byte
        let counter = 0;
        const step = { type, key: 'k', ...params } as StepConfig;
        return createTransformer(step, () => ({ name: 'k', id: 'k', type, version: 1 }), {
          keys,
          random: (b) => b.fill(++counter & 0xff),
          primitives,
        }).bind({ className: 'Customer', propertyName: 'field' });
      };
      const [js, native] = [build(JS_PRIMITIVES), build(nativePrimitives())];
      const digitsOnly = params['alphabet'] === 'digits';
      const value = () =>
        [
          () => Array.from({ length: 2 + int(30) }, () => String(int(10))).join(''),
          () => `${int(10_000)}-${int(10_000)} ${'x'.repeat(int(5))}`,
          () => (digitsOnly ? '12' : randomBytes(int(40)).toString('latin1')),
          () => 'lone \ud800 surrogate',
          () => 'Ωμέγα 😀 ' + int(1_000_000),
        ][int(5)]!();
      let batches = 0;
      for (; batches < 60; batches++) {
        const values = Array.from({ length: 1 + int(80) }, value);
        const protect = (t: typeof js) => answers(t.protectMany ? t.protectMany(values) : values.map((v) => tryOr(() => t.protect(v))));
        const [fromJs, fromNative] = [protect(js), protect(native)];
        expect(fromNative).toEqual(fromJs);
        const outputs = fromJs.filter((o) => !o.startsWith('error '));
        const unprotect = (t: typeof js, vs: string[]) => answers(t.unprotectMany ? t.unprotectMany(vs) : vs.map((v) => tryOr(() => t.unprotect(v))));
        expect(unprotect(native, outputs)).toEqual(unprotect(js, outputs));
        // a value edited in its last character: the same refusal (or the same other value, for FPE) on both sides
        const edited = outputs.map((o) => o.slice(0, -1) + (o.endsWith('A') ? 'B' : 'A'));
        expect(unprotect(native, edited)).toEqual(unprotect(js, edited));
      }
      expect(batches).toBe(60);
    },
  );
});

function tryOr(run: () => string): string | { code: string } {
  try {
    return run();
  } catch (e) {
    if (typeof (e as { code?: unknown }).code !== 'string') throw e;
    return e as { code: string };
  }
}
