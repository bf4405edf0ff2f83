// Issue 43, shredding backups on the Kafka subject-key store: a copy of the topic taken before an
// erasure (a backup, a mirror) is restored after `rotate-wrap-key`; under today's key set no key
// in it opens — the erased subject's included — while every host following the live topic keeps
// each living subject's key byte for byte. Under an old copy of the key set the backup still
// opens: that copy is what `veil keys destroy-kek` shreds (test/integration/keystore/kms-serve.test.ts).
// Real Kafka.
import { randomBytes } from 'node:crypto';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { rotateWrappingKey, type SubjectKeyStore } from '../../../src/subjects/index.ts';
import { cleanup, keyHex, keystoreIn, tempDir } from '../../subjects/helpers.ts';
import { copyTopic, openKafkaStore, processDir, sharedKeySet } from '../../subjects/kafka-helpers.ts';

const open: SubjectKeyStore[] = [];
const track = (s: SubjectKeyStore) => (open.push(s), s);
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});
afterAll(cleanup);

const PARTITIONS = 3;
const IDS = Array.from({ length: 8 }, (_, i) => `wrap-${i}@example.com`);
const ERASED = IDS[0]!;

/** A backup of the subject-key topic: every record copied into a new topic. */
async function backupTopic(from: string): Promise<string> {
  await copyTopic(from, `${from}.backup`, PARTITIONS);
  return `${from}.backup`;
}

describe('rotate-wrap-key on the Kafka subject-key store', () => {
  it('a backup of the topic opens nothing under the rotated key set; the live topic serves every living key unchanged', async () => {
    const keySet = await sharedKeySet();
    const topic = `veil.subjects.wrap-${randomBytes(4).toString('hex')}`;
    const dirA = await processDir(keySet);
    const keysA = await keystoreIn(dirA, keySet.master);
    const a = track(await openKafkaStore(dirA, keySet.master, topic, { partitions: PARTITIONS, keystore: keysA }));
    const before: Record<string, string> = {};
    for (const id of IDS) before[id] = keyHex(await a.keyFor(id));
    const backup = await backupTopic(topic);

    await a.erase(ERASED, { by: 'dpo', reason: 'Art. 17' });
    const done = await rotateWrappingKey(keysA, a);
    expect(done).toEqual({ version: 2, rewrapped: IDS.length - 1, live: IDS.length - 1, destroyed: [1] });

    // another host with today's key set (as the control store hands it out), reading the live topic from its start
    const dirC = await tempDir('veil-subjects-proc-');
    await copyFile(join(dirA, 'keystore.json'), join(dirC, 'keystore.json'));
    const c = track(await openKafkaStore(dirC, keySet.master, topic, { partitions: PARTITIONS }));
    for (const id of IDS.slice(1)) expect(keyHex(await c.existing(id)), id).toBe(before[id]);
    expect(await c.keyFor(ERASED)).toMatchObject({ erased: true });
    // and the host that rotated, from its cache and after
    for (const id of IDS.slice(1)) expect(keyHex(await a.keyFor(id))).toBe(before[id]);

    // the backup restored beside today's key set: no key opens
    const dirD = await tempDir('veil-subjects-proc-');
    await copyFile(join(dirA, 'keystore.json'), join(dirD, 'keystore.json'));
    const d = track(await openKafkaStore(dirD, keySet.master, backup, { partitions: PARTITIONS }));
    for (const id of IDS) await expect(d.existing(id), id).rejects.toThrow(/names version 1 of veil-subjects, which the key set does not hold/);

    // beside a copy of the key set from before the rotation, it still opens: that copy is shredded by destroying its KEK
    const dirE = await processDir(keySet);
    const e = track(await openKafkaStore(dirE, keySet.master, backup, { partitions: PARTITIONS }));
    expect(keyHex(await e.existing(ERASED))).toBe(before[ERASED]);
  }, 120_000);
});
