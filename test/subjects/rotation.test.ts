import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SecretKey } from '../../src/engine/index.ts';
import { masterKeyKms } from '../helpers/master-key-kms.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { SUBJECT_WRAP_KEY } from '../../src/keystore/subject-key-wrapper.ts';
import { openSubjectKeyStore, type SubjectKeyStore } from '../../src/subjects/index.ts';
import { cleanup, keyHex, tempDir } from './helpers.ts';

/**
 * Rotation keeps subject keys working (issue 29): rotating the KEK rewraps the key set and touches
 * no subject key (subjects.db's wrapped keys are the same bytes, and unwrap to the same keys);
 * rotating the wrapping key veil-subjects wraps new subject keys under its new version while the
 * older ones still unwrap under theirs.
 */
const stores: SubjectKeyStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  await cleanup();
});
const kek = (fill: number) => masterKeyKms(SecretKey.fromBytes(new Uint8Array(32).fill(fill)));

async function open(dir: string, keystore: LocalKeystore): Promise<SubjectKeyStore> {
  const store = await openSubjectKeyStore({ keystore, dataDir: dir, maxStalenessMs: 300 });
  stores.push(store);
  return store;
}

describe('subject keys across rotations', () => {
  it('a KEK rotation leaves every subject key and its stored bytes as they are', async () => {
    const dir = await tempDir();
    const underA = await LocalKeystore.open({ dataDir: dir, masterKey: SecretKey.fromBytes(randomBytes(32)), kms: kek(1) });
    await underA.rewrap(kek(1));
    const before = await open(dir, await LocalKeystore.open({ dataDir: dir, kms: kek(1) }));
    const keys = await Promise.all(['ann', 'bob', 'cy'].map(async (id) => keyHex(await before.keyFor(id))));
    await before.close();
    const storedBefore = await readFile(join(dir, 'subjects.db'));
    await (await LocalKeystore.open({ dataDir: dir, kms: kek(1) })).rewrap(kek(2));
    await expect(LocalKeystore.open({ dataDir: dir, kms: kek(1) })).rejects.toMatchObject({ code: 'KMS_REFUSED' });
    const after = await open(dir, await LocalKeystore.open({ dataDir: dir, kms: kek(2) }));
    expect(await Promise.all(['ann', 'bob', 'cy'].map(async (id) => keyHex(await after.existing(id))))).toEqual(keys);
    expect((await readFile(join(dir, 'subjects.db'))).equals(storedBefore)).toBe(true);
  });

  it('rotating veil-subjects wraps new subject keys under the new version; older ones still unwrap', async () => {
    const dir = await tempDir();
    const master = SecretKey.fromBytes(randomBytes(32));
    const keystore = await LocalKeystore.open({ dataDir: dir, masterKey: master });
    const store = await open(dir, keystore);
    const old = keyHex(await store.keyFor('early'));
    await keystore.rotate(SUBJECT_WRAP_KEY);
    expect(keystore.info(SUBJECT_WRAP_KEY)!.primary).toBe(2);
    const fresh = keyHex(await store.keyFor('late'));
    // another process, reading subjects.db with the rotated key set: both unwrap
    const other = await open(dir, await LocalKeystore.open({ dataDir: dir, masterKey: master }));
    expect(keyHex(await other.existing('early'))).toBe(old);
    expect(keyHex(await other.existing('late'))).toBe(fresh);
  });
});
