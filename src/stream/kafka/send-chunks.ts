import type { OutRecord } from './ports.ts';
import { BATCH_OVERHEAD, recordBytes } from './record-size.ts';

/** A produce request stays under this, whatever the topics allow. */
export const MAX_SEND_BYTES = 900 * 1024;

/**
 * Splits records into consecutive chunks, keeping their order, such that each topic's share of
 * a chunk fits that topic's max.message.bytes: a client sends at most one record batch per
 * partition per request, and the broker refuses a batch over the limit as a whole. Both Kafka
 * adapters send chunk after chunk, the next only once the previous one was acknowledged, so no
 * client can merge two chunks into one batch.
 */
export function sendChunks(records: readonly OutRecord[], limitOf: (topic: string) => number): OutRecord[][] {
  const out: OutRecord[][] = [];
  let current: OutRecord[] = [];
  let perTopic = new Map<string, number>();
  let total = 0;
  for (const r of records) {
    const size = recordBytes(r);
    const topicBytes = perTopic.get(r.topic) ?? BATCH_OVERHEAD;
    if (current.length && (topicBytes + size > Math.min(limitOf(r.topic), MAX_SEND_BYTES) || total + size > MAX_SEND_BYTES)) {
      out.push(current);
      current = [];
      perTopic = new Map();
      total = 0;
    }
    current.push(r);
    perTopic.set(r.topic, (perTopic.get(r.topic) ?? BATCH_OVERHEAD) + size);
    total += size;
  }
  if (current.length) out.push(current);
  return out;
}

/** The topics' limits, read once per send, then the records in chunks that fit them. */
export async function inChunks(records: readonly OutRecord[], maxMessageBytes: (topic: string) => Promise<number>, send: (chunk: OutRecord[]) => Promise<unknown>, tooLarge: (e: unknown) => boolean, forgetLimit: (topic: string) => void): Promise<void> {
  const topics = [...new Set(records.map((r) => r.topic))];
  const limits = new Map(await Promise.all(topics.map(async (t) => [t, await maxMessageBytes(t)] as const)));
  for (const chunk of sendChunks(records, (t) => limits.get(t)!)) {
    try {
      await send(chunk);
    } catch (e) {
      // the topic's limit changed under us: read it again before the batch is retried
      if (tooLarge(e)) for (const t of topics) forgetLimit(t);
      throw e;
    }
  }
}
