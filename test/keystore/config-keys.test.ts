import { describe, expect, it } from 'vitest';
import { ensureKey } from '../../src/keystore/ensure-key.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { randomMasterKey, tempDir } from './helpers.ts';

describe('ensureKey', () => {
  it('processes starting together on one keystore create a missing key once; the others take it (no KEY_EXISTS)', async () => {
    const dataDir = await tempDir();
    const masterKey = randomMasterKey();
    // the keystores of four processes (serve workers, gateways) opened before any of them created the key
    const stores = await Promise.all([1, 2, 3, 4].map(() => LocalKeystore.open({ dataDir, masterKey })));
    const created = await Promise.all(stores.map((k) => ensureKey(k, 'veil-token-signing', 'jwt-es256')));
    expect(created.filter(Boolean)).toHaveLength(1);
    const versions = stores.map((k) => k.info('veil-token-signing')?.versions.map((v) => v.version));
    expect(versions).toEqual(Array(4).fill([1]));
    expect(await ensureKey(stores[0]!, 'veil-token-signing', 'jwt-es256')).toBe(false);
  });
});
