// Issue 43, "Done when": the procedure of docs/erasure.md "Backups", run as written — with the KEK
// in a SoftHSM2 token (PKCS#11) and the subject-key store on a real Kafka topic. A copy of the
// topic (every record, partition for partition) and of keystore.json taken before an erasure is
// "restored" after the procedure (into another topic of the broker): no key in it opens, erased
// or living, whichever key set it is put beside; the living subjects keep their keys on the live
// store throughout. The commands are veil's own processes.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalKeystore } from '../../../src/keystore/local-keystore.ts';
import { pkcs11Kms } from '../../../src/keystore/kms/pkcs11-kms.ts';
import { ensureSubjectKeys } from '../../../src/keystore/subject-key-wrapper.ts';
import { openSubjectKeyStore, subjectStoreSettings, type SubjectKeyStore } from '../../../src/subjects/index.ts';
import { BROKERS } from '../../helpers/kafka.ts';
import { ROOT } from '../../helpers/processes.ts';
import { pkcs11Env, softHsmToken, type SoftHsm } from '../../helpers/softhsm.ts';
import { cleanup, keyHex, tempDir } from '../../subjects/helpers.ts';
import { copyTopic } from '../../subjects/kafka-helpers.ts';

const PARTITIONS = 3;
const IDS = Array.from({ length: 6 }, (_, i) => `shred-${i}@example.com`);
const ERASED = IDS[0]!;
const run = randomBytes(4).toString('hex');
const TOPIC = `veil.subjects.shred-${run}`;
const BACKUP_TOPIC = `${TOPIC}.backup`;

let hsm: SoftHsm;
let dataDir: string;
let backupDir: string;

const kekEnv = (label: string) => pkcs11Env(hsm, label);
const storeEnv = (topic = TOPIC) => ({
  VEIL_SUBJECT_STORE: 'kafka',
  KAFKA_BROKERS: BROKERS.join(','),
  VEIL_SUBJECT_TOPIC: topic,
  VEIL_SUBJECT_PARTITIONS: String(PARTITIONS),
  VEIL_LOG_LEVEL: 'warn',
});

/** `veil <args>` as its own process: exit code and output. */
function veil(args: string[], env: Record<string, string>, stdin = ''): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(join(ROOT, 'bin/veil'), args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (err += String(d)));
    child.once('exit', (code) => resolve({ code, out, err }));
    child.stdin.end(stdin);
  });
}

/** This process's view of a subject-key store: a data dir (its keystore.json under the KEK `label`) and a topic. */
async function withStore<T>(dir: string, label: string, topic: string, use: (store: SubjectKeyStore) => Promise<T>): Promise<T> {
  const kms = pkcs11Kms({ library: hsm.library, tokenLabel: hsm.tokenLabel, pin: hsm.pin, keyLabel: label });
  try {
    const keystore = await LocalKeystore.open({ dataDir: dir, kms });
    const store = await openSubjectKeyStore({ keystore, dataDir: dir, settings: subjectStoreSettings(storeEnv(topic)), maxStalenessMs: 1000 });
    try {
      return await use(store);
    } finally {
      await store.close();
    }
  } finally {
    await kms.close?.();
  }
}

beforeAll(async () => {
  hsm = await softHsmToken('veil-shred');
  hsm.createAesKey('kek-old');
  hsm.createAesKey('kek-new');
  dataDir = await tempDir('veil-shred-');
  backupDir = join(dataDir, 'backup');
  await mkdir(backupDir);
}, 180_000);
afterAll(async () => {
  await hsm?.dispose();
  await cleanup();
});

describe('shredding backups: the documented procedure with a PKCS#11 KEK and a Kafka subject-key topic', () => {
  it('after rotate-wrap-key, keys rewrap and destroy-kek, a copy taken before an erasure opens no key; living subjects keep theirs', async () => {
    // subjects with keys, under the old KEK
    const kms = pkcs11Kms({ library: hsm.library, tokenLabel: hsm.tokenLabel, pin: hsm.pin, keyLabel: 'kek-old' });
    await ensureSubjectKeys(await LocalKeystore.open({ dataDir, kms }));
    await kms.close?.();
    const before = await withStore(dataDir, 'kek-old', TOPIC, async (store) => {
      const keys: Record<string, string> = {};
      for (const id of IDS) keys[id] = keyHex(await store.keyFor(id));
      return keys;
    });

    // the backup: the topic and the key set as they were, the subject erased below included
    expect(await copyTopic(TOPIC, BACKUP_TOPIC, PARTITIONS)).toBeGreaterThanOrEqual(IDS.length);
    await copyFile(join(dataDir, 'keystore.json'), join(backupDir, 'keystore.json'));
    const erased = await veil(['subjects', 'erase', '-', '--reason', 'Art. 17', '--data-dir', dataDir], { ...kekEnv('kek-old'), ...storeEnv() }, ERASED);
    expect(erased.code, erased.err).toBe(0);

    // step 1: rotate the wrapping key of subject keys
    const rotated = await veil(['subjects', 'rotate-wrap-key', '--data-dir', dataDir], { ...kekEnv('kek-old'), ...storeEnv() });
    expect(rotated.code, rotated.err).toBe(0);
    expect(JSON.parse(rotated.out)).toEqual({ version: 2, rewrapped: IDS.length - 1, live: IDS.length - 1, destroyed: [1] });
    // step 2: the key set to a new KEK
    const to = Object.fromEntries(Object.entries(kekEnv('kek-new')).map(([k, v]) => [k.replace(/^VEIL_/, 'VEIL_TO_'), v]));
    const rewrapped = await veil(['keys', 'rewrap', '--data-dir', dataDir], { ...kekEnv('kek-old'), ...to });
    expect(rewrapped.code, rewrapped.err).toBe(0);
    // the living subjects keep their keys on the live store, under the new KEK
    await withStore(dataDir, 'kek-new', TOPIC, async (store) => {
      for (const id of IDS.slice(1)) expect(keyHex(await store.existing(id)), id).toBe(before[id]);
      expect(await store.existing(ERASED)).toMatchObject({ erased: true });
    });
    // until the old KEK is destroyed, the backup beside the backed-up key set still opens the erased key
    const backupView = join(backupDir, 'view-1');
    await mkdir(backupView);
    await copyFile(join(backupDir, 'keystore.json'), join(backupView, 'keystore.json'));
    await withStore(backupView, 'kek-old', BACKUP_TOPIC, async (store) => expect(keyHex(await store.existing(ERASED))).toBe(before[ERASED]));

    // step 3: destroy the old KEK
    const destroyed = await veil(['keys', 'destroy-kek', '--data-dir', dataDir], kekEnv('kek-old'));
    expect(destroyed.code, destroyed.err).toBe(0);
    expect(destroyed.out.trim()).toBe('PKCS#11 token veil-shred: key kek-old destroyed');

    // the backup restored: beside its own key set, nothing opens (the KEK is gone) ...
    const restoredOld = join(backupDir, 'view-2');
    await mkdir(restoredOld);
    await copyFile(join(backupDir, 'keystore.json'), join(restoredOld, 'keystore.json'));
    const oldKms = pkcs11Kms({ library: hsm.library, tokenLabel: hsm.tokenLabel, pin: hsm.pin, keyLabel: 'kek-old' });
    await expect(LocalKeystore.open({ dataDir: restoredOld, kms: oldKms })).rejects.toMatchObject({ code: expect.stringMatching(/^KMS_/) });
    await oldKms.close?.();
    // ... and beside today's key set, no key in it opens, erased or living
    const restoredNew = join(backupDir, 'view-3');
    await mkdir(restoredNew);
    await copyFile(join(dataDir, 'keystore.json'), join(restoredNew, 'keystore.json'));
    await withStore(restoredNew, 'kek-new', BACKUP_TOPIC, async (store) => {
      for (const id of IDS) await expect(store.existing(id), id).rejects.toThrow(/names version 1 of veil-subjects, which the key set does not hold/);
    });
    // the live store serves on
    await withStore(dataDir, 'kek-new', TOPIC, async (store) => {
      for (const id of IDS.slice(1)) expect(keyHex(await store.keyFor(id)), id).toBe(before[id]);
    });
    for (const text of [erased.out, erased.err, rotated.out, rotated.err, destroyed.out, destroyed.err]) {
      expect(text).not.toContain(ERASED);
      expect(text).not.toContain(hsm.pin);
    }
  }, 240_000);
});
