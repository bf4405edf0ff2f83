import { describe, expect, it } from 'vitest';
import { SecretKey } from '../../../src/engine/index.ts';
import { cachingKms, meteredKms, retryingKms } from '../../../src/keystore/kms/kms-decorators.ts';
import { KmsError, type Kms } from '../../../src/keystore/kms/kms.ts';
import { masterKeyKms } from '../../helpers/master-key-kms.ts';

const master = () => masterKeyKms(SecretKey.fromBytes(new Uint8Array(32).fill(7)));
const dataKey = Uint8Array.from({ length: 32 }, (_, i) => i);

describe('masterKeyKms', () => {
  it('round-trips, binds the context, and refuses another master key or any changed byte', async () => {
    const kms = master();
    const wrapped = await kms.wrap(dataKey, 'keyset/v3');
    expect(wrapped.length).toBe(1 + 12 + 32 + 16);
    expect(Buffer.from(wrapped).includes(Buffer.from(dataKey))).toBe(false);
    expect(await kms.unwrap(wrapped, 'keyset/v3')).toEqual(Buffer.from(dataKey));
    // a fresh nonce per wrap
    expect(Buffer.from(await kms.wrap(dataKey, 'keyset/v3')).equals(Buffer.from(wrapped))).toBe(false);
    await expect(kms.unwrap(wrapped, 'keyset/v4')).rejects.toMatchObject({ code: 'KMS_REFUSED', retriable: false });
    await expect(masterKeyKms(SecretKey.fromBytes(new Uint8Array(32).fill(8))).unwrap(wrapped, 'keyset/v3')).rejects.toBeInstanceOf(KmsError);
    for (let i = 0; i < wrapped.length; i++) {
      const bad = Uint8Array.from(wrapped);
      bad[i]! ^= 1;
      await expect(kms.unwrap(bad, 'keyset/v3')).rejects.toMatchObject({ code: 'KMS_REFUSED' });
    }
    await expect(kms.unwrap(wrapped.subarray(0, 20), 'keyset/v3')).rejects.toMatchObject({ code: 'KMS_REFUSED' });
  });
});

/** A KMS whose availability the test switches, counting calls. */
function flaky(inner: Kms): Kms & { down: boolean; calls: number } {
  const k = {
    description: 'flaky',
    down: false,
    calls: 0,
    async wrap(p: Uint8Array, c: string) {
      k.calls++;
      if (k.down) throw new KmsError('KMS_UNAVAILABLE', 'down');
      return inner.wrap(p, c);
    },
    async unwrap(w: Uint8Array, c: string) {
      k.calls++;
      if (k.down) throw new KmsError('KMS_UNAVAILABLE', 'down');
      return inner.unwrap(w, c);
    },
  };
  return k;
}

describe('KMS decorators', () => {
  it('cachingKms serves an unwrap for its lifetime through an outage, then refuses, and recovers when the KMS is back', async () => {
    let t = 0;
    const inner = flaky(master());
    const kms = cachingKms(inner, { ttlMs: 1000, now: () => t });
    const wrapped = await kms.wrap(dataKey, 'c');
    expect(await kms.unwrap(wrapped, 'c')).toEqual(Buffer.from(dataKey));
    inner.down = true;
    t = 999;
    const served = await kms.unwrap(wrapped, 'c');
    expect(served).toEqual(Buffer.from(dataKey));
    served.fill(0); // a caller wiping its copy does not wipe the cache's
    expect(await kms.unwrap(wrapped, 'c')).toEqual(Buffer.from(dataKey));
    t = 1000;
    await expect(kms.unwrap(wrapped, 'c')).rejects.toMatchObject({ code: 'KMS_UNAVAILABLE' });
    inner.down = false;
    expect(await kms.unwrap(wrapped, 'c')).toEqual(Buffer.from(dataKey));
    // another context is another entry, and the KMS refuses it
    await expect(kms.unwrap(wrapped, 'other')).rejects.toMatchObject({ code: 'KMS_REFUSED' });
  });

  it('retryingKms retries only what is retriable, with backoff, up to its attempts', async () => {
    const inner = flaky(master());
    const sleeps: number[] = [];
    const kms = retryingKms(inner, { attempts: 3, baseDelayMs: 100, sleep: async (ms) => void sleeps.push(ms) });
    const wrapped = await kms.wrap(dataKey, 'c');
    inner.down = true;
    inner.calls = 0;
    await expect(kms.unwrap(wrapped, 'c')).rejects.toMatchObject({ code: 'KMS_UNAVAILABLE' });
    expect(inner.calls).toBe(3);
    expect(sleeps).toHaveLength(2);
    expect(sleeps[0]!).toBeLessThanOrEqual(100);
    expect(sleeps[1]!).toBeLessThanOrEqual(200);
    inner.down = false;
    inner.calls = 0;
    await expect(kms.unwrap(wrapped, 'wrong')).rejects.toMatchObject({ code: 'KMS_REFUSED' });
    expect(inner.calls).toBe(1);
  });

  it('meteredKms records each call by operation and outcome', async () => {
    const seen: string[] = [];
    const inner = flaky(master());
    const kms = meteredKms(inner, {
      call: (op, outcome, seconds) => {
        expect(seconds).toBeGreaterThanOrEqual(0);
        seen.push(`${op}:${outcome}`);
      },
    });
    const wrapped = await kms.wrap(dataKey, 'c');
    await kms.unwrap(wrapped, 'c');
    await kms.unwrap(wrapped, 'x').catch(() => undefined);
    inner.down = true;
    await kms.unwrap(wrapped, 'c').catch(() => undefined);
    expect(seen).toEqual(['wrap:ok', 'unwrap:ok', 'unwrap:KMS_REFUSED', 'unwrap:KMS_UNAVAILABLE']);
  });
});
