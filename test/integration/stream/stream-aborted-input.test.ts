import type { Kafka, Producer, Transaction } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { pipelineYaml } from '../../helpers/stream.ts';
import { createTopics, javaConsumeCommitted, kafkaClient, topicsFor } from '../../helpers/kafka.ts';
import { streamClients } from '../../helpers/stream-clients.ts';
import { committedOffsets, stopStream, streamProcesses, untilConsumed } from '../../helpers/stream-processes.ts';
import { mulberry32 } from '../../helpers/seeded-random.ts';

const PARTITIONS = 4;
const MIN_RECORDS = 10_000;
const MIN_ABORTED = 0.3;

interface Written {
  committed: Set<number>;
  aborted: Set<number>;
  lastCommitted: number[];
}

/**
 * Two transactional producers write to the same raw partitions with overlapping transactions:
 * each producer's transaction stays open over several of its sends, the two producers' sends
 * alternate at random, and each transaction is committed or aborted (about 40% aborted) in
 * whichever order the dice say. Every record has a unique id.
 */
async function writeRaw(kafka: Kafka, topic: string, seed: number): Promise<Written> {
  const rnd = mulberry32(seed);
  const written: Written = { committed: new Set(), aborted: new Set(), lastCommitted: Array(PARTITIONS).fill(-1) };
  const producers: Producer[] = [];
  for (const name of ['a', 'b']) {
    const p = kafka.producer({ transactionalId: `${topic}.${name}`, idempotent: true, maxInFlightRequests: 1 });
    await p.connect();
    producers.push(p);
  }
  const open: ({ tx: Transaction; ids: number[]; last: number[] } | undefined)[] = [undefined, undefined];
  const end = async (i: number, abort: boolean) => {
    const t = open[i]!;
    open[i] = undefined;
    if (abort) {
      await t.tx.abort();
      for (const id of t.ids) written.aborted.add(id);
    } else {
      await t.tx.commit();
      for (const id of t.ids) written.committed.add(id);
      t.last.forEach((o, p) => (written.lastCommitted[p] = Math.max(written.lastCommitted[p]!, o)));
    }
  };
  let next = 0;
  const total = () => written.committed.size + written.aborted.size;
  const enough = () => total() >= MIN_RECORDS && written.aborted.size >= MIN_ABORTED * total();
  while (!enough() || open.some(Boolean)) {
    if (enough()) {
      // the open transactions end last, in either order
      for (const i of rnd() < 0.5 ? [0, 1] : [1, 0]) if (open[i]) await end(i, rnd() < 0.5);
      continue;
    }
    const i = rnd() < 0.5 ? 0 : 1;
    open[i] ??= { tx: await producers[i]!.transaction(), ids: [], last: Array(PARTITIONS).fill(-1) };
    const t = open[i]!;
    const ids = Array.from({ length: 40 + Math.floor(rnd() * 120) }, () => next++);
    const sent = await t.tx.send({
      topic,
      acks: -1,
      messages: ids.map((id) => ({
        partition: id % PARTITIONS,
        key: `user${id % 97}@example.com`,
        value: JSON.stringify({ id, email: `user${id % 97}@example.com` }),
      })),
    });
    t.ids.push(...ids);
    for (const r of sent) {
      const count = ids.filter((id) => id % PARTITIONS === r.partition).length;
      t.last[r.partition] = Math.max(t.last[r.partition]!, Number(r.baseOffset) + count - 1);
    }
    // a transaction spans one to several sends, the other producer's interleaved with them
    if (rnd() < 0.35) await end(i, rnd() < 0.4);
  }
  await Promise.all(producers.map((p) => p.disconnect()));
  return written;
}

/**
 * A record of an aborted transaction never existed: `veil stream protect` reading a raw topic
 * written by transactional producers must put exactly the committed records in the clean topic.
 * Verified by record id with Kafka's own Java read_committed client.
 */
describe('stream: raw input written transactionally, with overlapping aborted transactions (real broker, real process)', () => {
  const kafka = kafkaClient('aborted-input');
  const processes = streamProcesses();

  for (const client of streamClients()) {
    it(`${client}: the clean topic holds exactly the committed records — 0 aborted, 0 lost, 0 duplicated`, async () => {
      const seed = Number(process.env.VEIL_TEST_SEED ?? Math.floor(Math.random() * 2 ** 31));
      const t = topicsFor(`aborted-${client}`);
      await createTopics(kafka, [t.raw, t.clean], PARTITIONS);
      await createTopics(kafka, [t.dlq], 1);
      const written = await writeRaw(kafka, t.raw, seed);
      const total = written.committed.size + written.aborted.size;
      expect(total).toBeGreaterThanOrEqual(MIN_RECORDS);
      expect(written.aborted.size / total).toBeGreaterThanOrEqual(MIN_ABORTED);

      const processor = await processes.start('aborted', pipelineYaml(t, 'json'), client);
      // done when the group's offsets are past each partition's last committed record
      await untilConsumed(
        kafka,
        processor,
        async (admin) => {
          const offsets = await committedOffsets(admin, `veil-test-${t.id}`, t.raw);
          return written.lastCommitted.every((last, p) => (offsets.get(p) ?? -1) > last);
        },
        60_000,
        `${client}: all committed raw records processed (seed ${seed})`,
      );
      await stopStream(processor);

      const ids = (await javaConsumeCommitted(t.clean)).map((r) => (JSON.parse(r.value) as { id: number }).id);
      const unique = new Set(ids);
      const result = {
        clean: ids.length,
        aborted: ids.filter((id) => written.aborted.has(id)).length,
        lost: [...written.committed].filter((id) => !unique.has(id)).length,
        duplicated: ids.length - unique.size,
        deadLetters: (await javaConsumeCommitted(t.dlq)).length,
      };
      console.log(
        `aborted input (${client}, seed ${seed}): raw ${total} records, ${written.committed.size} committed, ${written.aborted.size} aborted; clean ${JSON.stringify(result)}`,
      );
      expect(result).toEqual({ clean: written.committed.size, aborted: 0, lost: 0, duplicated: 0, deadLetters: 0 });
    }, 120_000);
  }
});
