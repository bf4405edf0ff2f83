import { randomFillSync } from 'node:crypto';

/**
 * Secure random bytes served from a pool refilled 4 KiB at a time: one CSPRNG call per ~340
 * AES-GCM nonces instead of one per value (the per-call cost dominated randomized protection).
 * Bytes are handed out once and then overwritten by the next refill.
 */
export function pooledRandom(poolBytes = 4096): (out: Uint8Array) => Uint8Array {
  const pool = new Uint8Array(poolBytes);
  let used = poolBytes;
  return (out) => {
    if (out.length > poolBytes) return randomFillSync(out);
    if (used + out.length > poolBytes) {
      randomFillSync(pool);
      used = 0;
    }
    out.set(pool.subarray(used, used + out.length));
    pool.fill(0, used, used + out.length);
    used += out.length;
    return out;
  };
}
