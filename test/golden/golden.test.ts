import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { computeGolden, goldenSteps, type GoldenRecord } from './golden-cases.ts';

const pinned = JSON.parse(readFileSync(new URL('./outputs.json', import.meta.url), 'utf8')) as GoldenRecord[];

describe('golden outputs', () => {
  it('pins every output format: protecting the same inputs gives the same bytes', () => {
    expect(computeGolden()).toEqual(pinned);
  });

  it('unprotects every pinned output of a reversible step back to its value', () => {
    const steps = new Map(goldenSteps().map((s) => [s.name, s.transformer]));
    let checked = 0;
    for (const record of pinned) {
      const t = steps.get(record.step)!;
      if (!t.reversible) continue;
      expect(t.bind(record).unprotect(record.protected)).toBe(record.value);
      checked++;
    }
    expect(checked).toBeGreaterThan(20);
  });
});
