import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SubjectKeyWrapper } from '../../src/keystore/subject-key-wrapper.ts';
import { LocalBackend } from '../../src/subjects/local-backend.ts';
import { openSubjectKeyStore, type SubjectChange, type SubjectKeyStore } from '../../src/subjects/index.ts';
import { cleanup, keyHex, keystoreIn, tempDir } from './helpers.ts';

import { randomBytes } from 'node:crypto';
import { SecretKey } from '../../src/engine/index.ts';

const master = SecretKey.fromBytes(randomBytes(32));
const stores: SubjectKeyStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  await cleanup();
});

/** A store on `dir` as a process opens it: its own keystore object on the shared data dir. */
async function open(dir: string, options: { cacheSize?: number; maxStalenessMs?: number } = {}) {
  const keystore = await keystoreIn(dir, master);
  const store = await openSubjectKeyStore({ keystore, dataDir: dir, maxStalenessMs: 300, ...options });
  stores.push(store);
  return { store, keystore };
}

describe('the local subject-key store (subjects.db in the data dir)', () => {
  it('creates a key on first use and serves the same one after; existing never creates', async () => {
    const { store } = await open(await tempDir());
    expect(await store.existing('alice')).toBeUndefined();
    expect(await store.status('alice')).toMatchObject({ state: 'unknown' });
    const first = await store.keyFor('alice');
    expect(first).toMatchObject({ generation: 1 });
    expect(keyHex(await store.keyFor('alice'))).toBe(keyHex(first));
    expect(keyHex(await store.existing('alice'))).toBe(keyHex(first));
    expect(keyHex(await store.keyFor('bob'))).not.toBe(keyHex(first));
    expect(await store.status('alice')).toMatchObject({ state: 'exists', generation: 1 });
    expect(JSON.stringify(await store.status('alice'))).not.toContain('alice');
  });

  it('an erasure destroys the key: the erased marker everywhere after, never a silent new key unless renew is asked', async () => {
    const { store } = await open(await tempDir());
    await store.keyFor('alice');
    const erasure = await store.erase('alice', { by: 'admin', reason: 'Art. 17 request 42' });
    expect(erasure).toMatchObject({ generation: 1, by: 'admin', reason: 'Art. 17 request 42', alreadyErased: false });
    expect(erasure.destroyedKey).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(erasure)).not.toContain('alice');
    expect(await store.keyFor('alice')).toMatchObject({ erased: true, generation: 1 });
    expect(await store.existing('alice')).toMatchObject({ erased: true, generation: 1 });
    expect(await store.status('alice')).toMatchObject({ state: 'erased', generation: 1 });
    expect(await store.erase('alice', { by: 'b', reason: 'again' })).toMatchObject({ alreadyErased: true, destroyedKey: erasure.destroyedKey });
    const renewed = await store.keyFor('alice', { onErased: 'renew' });
    expect(renewed).toMatchObject({ generation: 2 });
    expect(await store.existing('alice', 1)).toMatchObject({ erased: true, generation: 1 });
    expect(keyHex(await store.existing('alice', 2))).toBe(keyHex(renewed));
    expect(await store.existing('alice', 3)).toBeUndefined();
  });

  it('an erasure of a subject without a key is recorded: a later protect is refused (or renewed)', async () => {
    const { store } = await open(await tempDir());
    expect(await store.erase('carol', { by: 'a', reason: 'r' })).toMatchObject({ generation: 1, alreadyErased: false });
    expect((await store.erase('carol', { by: 'a', reason: 'r' })).destroyedKey).toBeUndefined();
    expect(await store.keyFor('carol')).toMatchObject({ erased: true });
    expect(await store.keyFor('carol', { onErased: 'renew' })).toMatchObject({ generation: 2 });
  });

  it('two processes creating one subject at once end with one key (a conditional insert: the first wins, the other adopts it)', async () => {
    const dir = await tempDir();
    const { keystore } = await open(dir);
    const wrapper = new SubjectKeyWrapper(keystore);
    const ref = wrapper.refOf('dave');
    const [a, b] = [new LocalBackend({ dataDir: dir }), new LocalBackend({ dataDir: dir })];
    const ka = wrapper.create(ref, 1);
    const kb = wrapper.create(ref, 1);
    const [ra, rb] = [await a.create(ref, 1, ka.wrapped, 1), await b.create(ref, 1, kb.wrapped, 2)];
    expect([ra.won, rb.won]).toEqual([true, false]);
    expect(rb.state.wrapped!.equals(ka.wrapped)).toBe(true);
    await Promise.all([a.close(), b.close()]);
    const [x, y] = [await open(dir), await open(dir)];
    const keys = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? x : y).store.keyFor('erin')));
    expect(new Set(keys.map(keyHex)).size).toBe(1);
  });

  it("another process's erasure reaches this one's cache within the staleness bound, and its erase returned only after", async () => {
    const dir = await tempDir();
    const [a, b] = [await open(dir), await open(dir)];
    await b.store.keyFor('frank');
    const seen: SubjectChange[] = [];
    b.store.onChange((c) => seen.push(c));
    const started = Date.now();
    await a.store.erase('frank', { by: 'a', reason: 'r' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(await b.store.keyFor('frank')).toMatchObject({ erased: true });
    expect(seen.map((c) => c.kind)).toContain('erased');
    expect(seen[0]!.ref).toMatch(/^[0-9a-f]{32}$/);
  });

  it('the file holds no subject id, and after an erasure not the wrapped key it held (secure_delete, WAL checkpointed)', async () => {
    const dir = await tempDir();
    const { store } = await open(dir);
    await store.keyFor('grace@example.com');
    const files = () =>
      ['subjects.db', 'subjects.db-wal'].map((f) => {
        try {
          return readFileSync(join(dir, f));
        } catch {
          return Buffer.alloc(0);
        }
      });
    const { SubjectDb } = await import('../../src/subjects/subject-db.ts');
    const db = new SubjectDb(join(dir, 'subjects.db'));
    const ref = new SubjectKeyWrapper(await keystoreIn(dir, master)).refOf('grace@example.com');
    const wrapped = db.get(ref)!.wrapped!;
    db.close();
    expect(files().some((f) => f.includes(wrapped))).toBe(true);
    expect(files().some((f) => f.includes(Buffer.from('grace@example.com')))).toBe(false);
    await store.erase('grace@example.com', { by: 'a', reason: 'r' });
    expect(files().some((f) => f.includes(wrapped.subarray(4, 36)))).toBe(false);
  });

  it('refuses what is not a subject id without echoing it', async () => {
    const { store } = await open(await tempDir());
    for (const bad of ['', 'a\nb', 'x'.repeat(513), '\ud800']) {
      await expect(store.keyFor(bad)).rejects.toMatchObject({ code: 'SUBJECT_ID_INVALID' });
    }
  });
});
