// Issue 43, shredding backups: `veil subjects rotate-wrap-key` wraps every living subject key under
// a new version of veil-subjects and destroys the older versions. A copy of the subject-key store
// taken before (a backup holding a subject erased since) opens nothing under the key set after;
// the living subjects keep their keys (the same bytes: nothing protected changes). Local store.
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { revealKeyBytes, SecretKey } from '../../src/engine/index.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { openSubjectKeyStore, type SubjectKeyStore } from '../../src/subjects/index.ts';
import { fakeCliIo, masterKeyHex, tempDir, veil } from '../helpers/cli-io.ts';

const LIVING = ['ann@example.org', 'bob@example.org'];
const ERASED = 'cyd@example.org';

const openKeys = (dataDir: string, hex: string) => LocalKeystore.open({ dataDir, masterKey: SecretKey.fromBytes(Buffer.from(hex, 'hex')) });

async function withStore<T>(dataDir: string, hex: string, use: (store: SubjectKeyStore, keystore: LocalKeystore) => Promise<T>): Promise<T> {
  const keystore = await openKeys(dataDir, hex);
  const store = await openSubjectKeyStore({ keystore, dataDir });
  try {
    return await use(store, keystore);
  } finally {
    await store.close();
  }
}

async function keyHex(store: SubjectKeyStore, id: string): Promise<string> {
  const k = await store.keyFor(id);
  if (k.erased) throw new Error(`${id} is erased`);
  return Buffer.from(revealKeyBytes(k.key)).toString('hex');
}

describe('veil subjects rotate-wrap-key', () => {
  it('living keys keep their bytes, the old versions are destroyed, and a backup taken before opens nothing', async () => {
    const cwd = await tempDir();
    const hex = masterKeyHex();
    const dataDir = join(cwd, '.veil');
    const io = fakeCliIo(cwd, { VEIL_MASTER_KEY: hex });
    const before = await withStore(dataDir, hex, async (store) => {
      const keys: Record<string, string> = {};
      for (const id of [...LIVING, ERASED]) keys[id] = await keyHex(store, id);
      return keys;
    });
    // the backup: the subject-key store as it was, with the subject erased below still holding a key
    const backup = join(cwd, 'backup');
    await mkdir(backup);
    await copyFile(join(dataDir, 'subjects.db'), join(backup, 'subjects.db'));
    expect((await veil(io, ['subjects', 'erase', '-', '--reason', 'Art. 17'], ERASED)).code).toBe(0);

    const run = await veil(io, ['subjects', 'rotate-wrap-key']);
    expect(run.code, run.err).toBe(0);
    expect(JSON.parse(run.out)).toEqual({ version: 2, rewrapped: 2, live: 2, destroyed: [1] });
    expect(run.err).toContain('2 of 2 living subject keys rewrapped under version 2; version(s) 1 destroyed');

    await withStore(dataDir, hex, async (store, keystore) => {
      expect(keystore.info('veil-subjects')!.versions.map((v) => v.version)).toEqual([2]);
      for (const id of LIVING) expect(await keyHex(store, id)).toBe(before[id]);
      expect(await store.keyFor(ERASED)).toMatchObject({ erased: true });
    });

    // the backup restored beside today's key set: no key in it opens, the erased subject's included
    const restored = join(cwd, 'restored');
    await mkdir(restored);
    await copyFile(join(backup, 'subjects.db'), join(restored, 'subjects.db'));
    await copyFile(join(dataDir, 'keystore.json'), join(restored, 'keystore.json'));
    await withStore(restored, hex, async (store) => {
      for (const id of [ERASED, ...LIVING]) {
        await expect(store.keyFor(id)).rejects.toThrow(/names version 1 of veil-subjects, which the key set does not hold/);
      }
    });

    // again: the next version; a subject created since rotates along
    await withStore(dataDir, hex, async (store) => void (await keyHex(store, 'dee@example.org')));
    const again = await veil(io, ['subjects', 'rotate-wrap-key']);
    expect(JSON.parse(again.out)).toEqual({ version: 3, rewrapped: 3, live: 3, destroyed: [2] });
    await withStore(dataDir, hex, async (store) => {
      for (const id of LIVING) expect(await keyHex(store, id)).toBe(before[id]);
    });
    for (const text of [run.out, run.err, again.out, again.err]) for (const id of [...LIVING, ERASED]) expect(text).not.toContain(id);
    // each rotation is in the audit log: who, the new version, what was destroyed; never a key
    const audit = (await readFile(join(dataDir, 'audit.log'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { channel: string; subject: string; outcome: string; admin?: { action: string; target?: string } });
    expect(audit.filter((e) => e.admin?.action === 'subject.rotate-wrap-key').map((e) => [e.channel, e.subject, e.outcome, e.admin!.target])).toEqual([
      ['cli', expect.stringMatching(/^cli:/), 'ok', 'veil-subjects v2; destroyed v1; 2 of 2 rewrapped'],
      ['cli', expect.stringMatching(/^cli:/), 'ok', 'veil-subjects v3; destroyed v2; 3 of 3 rewrapped'],
    ]);
  });

  it('takes no operand and no flag of erase', async () => {
    const io = fakeCliIo(await tempDir(), { VEIL_MASTER_KEY: masterKeyHex() });
    expect(await veil(io, ['subjects', 'rotate-wrap-key', 'x'])).toMatchObject({ code: 2, err: expect.stringContaining("'rotate-wrap-key' takes no operand") });
    expect(await veil(io, ['subjects', 'rotate-wrap-key', '--reason', 'r'])).toMatchObject({
      code: 2,
      err: expect.stringContaining('--reason does not apply'),
    });
    expect(await veil(io, ['subjects', 'rotate-wrap-key', '--from', 'f'])).toMatchObject({ code: 2, err: expect.stringContaining('--from does not apply') });
  });
});
