import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { SubjectChange, SubjectKeyStore } from '../../../src/subjects/index.ts';
import { kafkaClient } from '../../helpers/kafka.ts';
import { cleanup, keyHex } from '../../subjects/helpers.ts';
import { openKafkaStore, processDir, sharedKeySet } from '../../subjects/kafka-helpers.ts';
import { readRaw } from '../../subjects/raw-topic.ts';
import { waitFor } from '../../helpers/processes.ts';

const open: SubjectKeyStore[] = [];
const track = (s: SubjectKeyStore) => (open.push(s), s);
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});
afterAll(cleanup);
const topicName = () => `veil.subjects.test-${randomBytes(4).toString('hex')}`;

describe('the subject-key store on Kafka: every process follows one compacted topic', () => {
  it('two processes protecting the same new subjects at once end with one key each (first write wins, the other adopts it)', async () => {
    const keySet = await sharedKeySet();
    const topic = topicName();
    const [a, b] = [
      track(await openKafkaStore(await processDir(keySet), keySet.master, topic)),
      track(await openKafkaStore(await processDir(keySet), keySet.master, topic)),
    ];
    const ids = Array.from({ length: 30 }, (_, i) => `race-${i}@example.com`);
    const pairs = await Promise.all(ids.map(async (id) => Promise.all([a.keyFor(id), b.keyFor(id)])));
    for (const [ka, kb] of pairs) {
      expect(keyHex(ka)).toBe(keyHex(kb));
      expect(ka.generation).toBe(1);
    }
    // a third process, reading the topic from the start, agrees
    const c = track(await openKafkaStore(await processDir(keySet), keySet.master, topic));
    for (const [i, id] of ids.entries()) expect(keyHex(await c.existing(id))).toBe(keyHex(pairs[i]![0]));
  });

  it("an erasure on one process reaches another's cache in under 2 s; a protect there then gets the erased marker", async () => {
    const keySet = await sharedKeySet();
    const topic = topicName();
    const [a, b] = [
      track(await openKafkaStore(await processDir(keySet), keySet.master, topic)),
      track(await openKafkaStore(await processDir(keySet), keySet.master, topic)),
    ];
    await b.keyFor('henry');
    await a.existing('henry');
    const seen = new Promise<number>((resolve) => b.onChange((c: SubjectChange) => c.kind === 'erased' && resolve(Date.now())));
    const started = Date.now();
    const erasure = await a.erase('henry', { by: 'admin', reason: 'request' });
    expect(erasure.destroyedKey).toMatch(/^[0-9a-f]{64}$/);
    expect((await seen) - started).toBeLessThan(2000);
    expect(await b.keyFor('henry')).toMatchObject({ erased: true, generation: 1 });
    expect(await b.existing('henry')).toMatchObject({ erased: true });
  });

  it('a process that was down during an erasure resumes from its stored offsets and never serves the key again', async () => {
    const keySet = await sharedKeySet();
    const topic = topicName();
    const a = track(await openKafkaStore(await processDir(keySet), keySet.master, topic));
    const downDir = await processDir(keySet);
    const down = await openKafkaStore(downDir, keySet.master, topic);
    const before = await down.keyFor('iris');
    await down.keyFor('jack');
    await down.close();
    await a.erase('iris', { by: 'admin', reason: 'request' });
    const restarted = track(await openKafkaStore(downDir, keySet.master, topic));
    expect(await restarted.existing('iris')).toMatchObject({ erased: true });
    expect(await restarted.keyFor('iris')).toMatchObject({ erased: true });
    expect(keyHex(await restarted.existing('jack'))).toBe(keyHex(await a.existing('jack')));
    expect(keyHex(before)).not.toBe('');
  });

  it('the compacted topic, read raw after compaction, holds no key material and no id of the erased subjects', async () => {
    const keySet = await sharedKeySet();
    const topic = topicName();
    const a = track(await openKafkaStore(await processDir(keySet), keySet.master, topic));
    const ids = Array.from({ length: 24 }, (_, i) => `person-${i}@example.com`);
    for (const id of ids) await a.keyFor(id);
    const before = await readRaw(kafkaClient(), topic);
    const erased = await Promise.all(ids.slice(0, 8).map((id) => a.erase(id, { by: 'admin', reason: 'r' })));
    const refs = new Set(erased.map((e) => e.subject));
    const wrappedOf = (r: Awaited<ReturnType<typeof readRaw>>) =>
      r.filter((m) => m.key.startsWith('k/') && m.value && refs.has(m.key.split('/')[1]!)).map((m) => m.value!);
    const material = wrappedOf(before);
    expect(material.length).toBe(8);
    let after = before;
    await waitFor(
      async () => {
        after = await readRaw(kafkaClient(), topic);
        if (wrappedOf(after).length === 0) return true;
        await a.keyFor(`filler-${randomBytes(4).toString('hex')}`); // rolls segments, so the cleaner can take them
        return false;
      },
      90_000,
      "the cleaner to remove the erased subjects' key records",
    );
    expect(wrappedOf(after)).toEqual([]);
    const everything = Buffer.concat(after.flatMap((m) => [Buffer.from(m.key), m.value ?? Buffer.alloc(0)]));
    for (const value of material) expect(everything.includes(JSON.parse(value.toString()).w)).toBe(false);
    for (const id of ids) expect(everything.includes(Buffer.from(id))).toBe(false);
    // the erasure records stay: a process reading the compacted topic from scratch knows they were erased
    const fresh = track(await openKafkaStore(await processDir(keySet), keySet.master, topic));
    for (const id of ids.slice(0, 8)) expect(await fresh.keyFor(id)).toMatchObject({ erased: true });
    for (const id of ids.slice(8)) expect(keyHex(await fresh.existing(id))).toBe(keyHex(await a.existing(id)));
  }, 120_000);

  it('an erasure racing creations of the same subject on another process leaves no readable key after it returned', async () => {
    const keySet = await sharedKeySet();
    const topic = topicName();
    const [a, b] = [
      track(await openKafkaStore(await processDir(keySet), keySet.master, topic)),
      track(await openKafkaStore(await processDir(keySet), keySet.master, topic)),
    ];
    const ids = Array.from({ length: 10 }, (_, i) => `racer-${i}`);
    await Promise.all(
      ids.map(async (id) => {
        const creating = b.keyFor(id).catch((e: unknown) => e);
        await a.erase(id, { by: 'admin', reason: 'r' });
        await creating;
        // after the erasure returned: no process serves a key for the subject, and no protect creates one
        expect(await a.keyFor(id)).toMatchObject({ erased: true });
        expect(await b.keyFor(id)).toMatchObject({ erased: true });
        expect(await b.existing(id)).toMatchObject({ erased: true });
      }),
    );
  });
});
