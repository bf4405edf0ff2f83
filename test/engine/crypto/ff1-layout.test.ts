import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { modBy } from '../../../src/engine/crypto/ff1-layout.ts';

const exact = (x: number, m: number) => Number(BigInt(x) % BigInt(m));

describe('FF1 fast path: modulo by reciprocal (modBy)', () => {
  it('equals the exact remainder for every x with x + m <= 2^53 and m <= 2^44', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 2 ** 44 }), fc.double({ min: 0, max: 1, noNaN: true }), (m, f) => {
        const x = Math.floor(f * (2 ** 53 - m));
        expect(modBy(x, m, 1 / m)).toBe(exact(x, m));
      }),
      { numRuns: 20_000 },
    );
  });

  it('takes both corrections: a quotient estimate one too high and one too low', () => {
    let low = 0;
    let high = 0;
    for (let m = 3; m < 2 ** 44; m = Math.floor(m * 1.7) + 1) {
      for (const x of [2 ** 53 - m, 2 ** 53 - 2 * m - 1, m * Math.floor((2 ** 53 - m) / m), m * Math.floor((2 ** 53 - m) / m) - 1, 2 ** 52 + 1, m - 1, m, 0]) {
        const r = x - Math.floor(x * (1 / m)) * m;
        if (r < 0) low++;
        if (r >= m) high++;
        expect(modBy(x, m, 1 / m), `${x} mod ${m}`).toBe(exact(x, m));
      }
    }
    // random search for estimates off in either direction, each checked against BigInt
    for (let t = 0; t < 200_000 && (low === 0 || high === 0 || t < 50_000); t++) {
      const m = Math.floor(2 ** (2 + ((t * 7919) % 4200) / 100)) + (t % 97);
      const x = Math.floor((((t * 2654435761) % 1e9) / 1e9) * (2 ** 53 - m));
      const r = x - Math.floor(x * (1 / m)) * m;
      if (r < 0) low++;
      if (r >= m) high++;
      expect(modBy(x, m, 1 / m)).toBe(exact(x, m));
    }
    expect(low).toBeGreaterThan(0);
    expect(high).toBeGreaterThan(0);
  });
});
