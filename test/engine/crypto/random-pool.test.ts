import { describe, expect, it } from 'vitest';
import { pooledRandom } from '../../../src/engine/crypto/random-pool.ts';

describe('pooledRandom', () => {
  it('never hands out the same bytes twice, across refills', () => {
    const random = pooledRandom(64);
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const nonce = Buffer.from(random(new Uint8Array(12))).toString('hex');
      expect(seen.has(nonce)).toBe(false);
      seen.add(nonce);
    }
  });

  it('serves requests larger than the pool directly, and looks uniform', () => {
    const random = pooledRandom(64);
    const big = random(new Uint8Array(100_000));
    const counts = new Array(256).fill(0);
    for (const b of big) counts[b]++;
    // each byte value ~390 times; a broken source (zeros, a short cycle) is far off
    expect(Math.min(...counts)).toBeGreaterThan(250);
    expect(Math.max(...counts)).toBeLessThan(550);
  });
});
