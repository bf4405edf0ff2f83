import type { Kafka } from 'kafkajs';

export interface RawRecord {
  partition: number;
  offset: string;
  key: string;
  value: Buffer | null;
}

/** Every record of every partition of `topic` as stored now (tombstones included), read with a throwaway group. */
export async function readRaw(kafka: Kafka, topic: string): Promise<RawRecord[]> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, Number(o.high)]));
  await admin.disconnect();
  const got: RawRecord[] = [];
  const next = new Map<number, number>();
  const consumer = kafka.consumer({ groupId: `raw-${Math.random().toString(16).slice(2)}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const done = new Promise<void>((resolve) => {
    const check = () => [...ends].every(([p, end]) => (next.get(p) ?? 0) >= end) && resolve();
    void consumer.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) got.push({ partition: batch.partition, offset: m.offset, key: m.key?.toString('latin1') ?? '', value: m.value });
        next.set(batch.partition, Number(batch.lastOffset()) + 1);
        check();
      },
    });
    check();
  });
  await Promise.race([done, new Promise((r) => setTimeout(r, 30_000))]);
  await consumer.disconnect();
  return got;
}
