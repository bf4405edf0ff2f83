import type { OutRecord } from './ports.ts';
import { KafkaError } from './kafka-error.ts';
import { BATCH_OVERHEAD, recordBytes } from './record-size.ts';

/** A produce request stays under this, whatever the topics allow. */
export const MAX_SEND_BYTES = 900 * 1024;

/**
 * Splits records into consecutive chunks, keeping their order, such that each topic's share of
 * a chunk fits that topic's max.message.bytes: a client sends at most one record batch per
 * partition per request, and the broker refuses a batch over the limit as a whole. Both Kafka
 * adapters send such chunks one after the other, the next only once the previous one was
 * acknowledged, so no client can merge two chunks into one batch.
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

/**
 * How a chunk is sent: `settle` true — the next chunk only once this one is acknowledged (its
 * errors thrown here); false — queued with nothing awaited, its errors surfacing at the
 * transaction's commit (the client keeps every batch under each topic's limit by itself).
 */
export type SendChunk = (chunk: OutRecord[], settle: boolean) => Promise<unknown>;

/**
 * The topics' limits, read once per send, then the records in chunks that fit them. When the
 * client caps each batch it builds at `clientBatchBytes` (a record larger goes alone, and every
 * record was checked alone against its topic's limit) and every topic takes that much, no chunk
 * boundary is needed: the records go as one chunk that need not settle — a chunk settling is a
 * broker round trip, several per batch on a busy partition.
 */
export async function inChunks(
  records: readonly OutRecord[],
  maxMessageBytes: (topic: string) => Promise<number>,
  send: SendChunk,
  tooLarge: (e: unknown) => boolean,
  forgetLimit: (topic: string) => void,
  clientBatchBytes?: number,
): Promise<void> {
  refuseDetached(records);
  const topics = [...new Set(records.map((r) => r.topic))];
  const limits = new Map(await Promise.all(topics.map(async (t) => [t, await maxMessageBytes(t)] as const)));
  const unchunked = clientBatchBytes !== undefined && [...limits.values()].every((limit) => limit >= clientBatchBytes + BATCH_OVERHEAD);
  const chunks = unchunked ? [records as OutRecord[]] : sendChunks(records, (t) => limits.get(t)!);
  for (const chunk of chunks) {
    try {
      await send(chunk, !unchunked);
    } catch (e) {
      // the topic's limit changed under us: read it again before the batch is retried
      if (tooLarge(e)) for (const t of topics) forgetLimit(t);
      throw e;
    }
  }
}

/**
 * A record whose key or value is a view of a buffer given away (a protection worker's outcome
 * buffer, released before its batch was sent) would go out empty: refused before any record of
 * the send is queued. Only a bug in veil gets here; the batch is aborted and read again.
 */
function refuseDetached(records: readonly OutRecord[]): void {
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    if (released(r.value) || released(r.key)) {
      throw new KafkaError('RECORD_DETACHED', "a record's bytes were released before it was sent", true);
    }
  }
}

/**
 * a view of a transferred (detached) ArrayBuffer, whose length reads 0 — so only empty views are
 * looked at: `.buffer` of a small typed array kept on V8's heap moves it off the heap, a cost per
 * record otherwise (a SharedArrayBuffer is never detached)
 */
const released = (b: Buffer | null) => b !== null && b.length === 0 && (b.buffer as { detached?: boolean }).detached === true;
