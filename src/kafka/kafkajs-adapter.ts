import { createRequire } from 'node:module';
import { Partitioners, type Batch as KafkajsBatch, type Consumer, type KafkaConfig, type KafkaMessage, type Producer, type RecordHeader } from 'kafkajs';
import type { KafkaConnection } from './client-settings.ts';
import { kafkajsClient } from './kafkajs-client.ts';
import {
  type Batch,
  type CaughtUp,
  type ConsumerPort,
  type Header,
  type InRecord,
  type KafkaLog,
  type KafkaPort,
  type OutRecord,
  type ProducerPort,
  type Transaction,
} from './ports.ts';
import { inChunks as sendInChunks } from './send-chunks.ts';
import { topicLimits, type TopicLimits } from './kafkajs-topic-limits.ts';
import { stableOffsetFetch } from './kafkajs-stable-offsets.ts';
import { deniedBy, fromKafkajs, kafkajsCall, toKafkajs } from './kafkajs-errors.ts';
import type { KafkaError } from './kafka-error.ts';

/** Fetch sizes: larger fetches make fewer, larger transactions (a transaction costs ~4 round trips). */
export interface FetchTuning {
  maxBytesPerPartition?: number;
  maxWaitTimeInMs?: number;
  partitionsConsumedConcurrently?: number;
}

/** The kafkajs patches veil needs (patches/kafkajs, applied on install by scripts/patch-kafkajs.mjs). */
const KAFKAJS_PATCH = 'veil-kafkajs-2.2.4-1';

/**
 * Fails closed on a kafkajs without veil's patches: its read_committed would deliver records of
 * aborted transactions, and it could neither write null header values nor read stable offsets.
 */
export function assertKafkajsPatched(): void {
  let id: unknown;
  try {
    id = (createRequire(import.meta.url)('kafkajs/src/veil-patch.js') as { id?: unknown }).id;
  } catch {
    // not patched at all
  }
  if (id !== KAFKAJS_PATCH) {
    throw new Error(
      `kafkajs is not patched for veil (want ${KAFKAJS_PATCH}, found ${typeof id === 'string' ? id : 'none'}): run \`node scripts/patch-kafkajs.mjs\` (npm ci does)`,
    );
  }
}

/**
 * KafkaPort over kafkajs 2.2.4 with veil's patches (patches/kafkajs): read_committed as Kafka's
 * Java consumer filters it, exact headers, OffsetFetch v7. Transactional producers follow kafkajs' Transactions.md: idempotent,
 * maxInFlightRequests 1, one transactional id per input partition (kafkajs has no KIP-447, so
 * zombie fencing comes from the id, not from the group generation).
 */
export function kafkajsPort(options: {
  connection: KafkaConnection;
  clientId: string;
  log?: KafkaLog;
  config?: Partial<KafkaConfig>;
  sessionTimeoutMs?: number;
  fetch?: FetchTuning;
}): KafkaPort {
  assertKafkajsPatched();
  const sessionTimeout = options.sessionTimeoutMs ?? 30_000;
  const kafka = kafkajsClient(options.connection, options.clientId, {
    log: options.log ?? (() => undefined),
    ...(options.config ? { config: options.config } : {}),
  });
  const limits = topicLimits(kafka);
  const fetch = options.fetch ?? {};
  const stable = stableOffsetFetch(() => limits.admin());
  return {
    consumer: ({ groupId, readCommitted }) =>
      consumerPort(
        kafka.consumer({
          groupId,
          readUncommitted: !readCommitted,
          allowAutoTopicCreation: false,
          // kafkajs restarts a crashed consumer only when the root cause is retriable; the pipeline
          // watches `crashed` and re-creates a consumer that stays down. A refusal of this client
          // (credentials, certificate, permissions) is not restarted: the crash reports it
          retry: { retries: 10, restartOnFailure: async (e) => !deniedBy(e) },
          sessionTimeout,
          heartbeatInterval: Math.max(500, Math.floor(sessionTimeout / 10)),
          maxBytesPerPartition: fetch.maxBytesPerPartition ?? 1_048_576,
          maxBytes: 4 * (fetch.maxBytesPerPartition ?? 1_048_576) + 1_048_576,
          maxWaitTimeInMs: fetch.maxWaitTimeInMs ?? 1000,
        }),
        fetch.partitionsConsumedConcurrently ?? 4,
      ),
    async producer({ transactionalId }) {
      // Java-compatible murmur2 partitioning, so veil and Java producers agree on key → partition
      const common = { idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner };
      const producer = kafka.producer(transactionalId ? { ...common, transactionalId, transactionTimeout: 60_000 } : common);
      await kafkajsCall('producer connect', () => producer.connect());
      if (transactionalId) {
        // kafkajs sends InitProducerId for the transactional id only at the first transaction(),
        // not at connect: begin (and drop) an empty one now, so that this producer has fenced
        // the id's earlier producers — and their pending transaction is complete — when it is
        // returned (PartitionTransactions reads the committed offset only after that)
        try {
          await kafkajsCall('fence', async () => (await producer.transaction()).abort());
        } catch (e) {
          await producer.disconnect().catch(() => undefined);
          throw e;
        }
      }
      return producerPort(producer, limits);
    },
    // stable (KIP-447 require_stable): a transaction's offset that is committed but not yet
    // applied by the group coordinator is waited for, never read as the offset before it
    committedOffset: (groupId, topic, partition) => stable.fetch(groupId, topic, partition),
    maxMessageBytes: (topic) => limits.maxMessageBytes(topic),
    async disconnect() {
      await limits.close();
    },
  };
}

/**
 * Headers as the patched kafkajs writes and reads them: an ordered list, each entry as it is
 * (repeated and interleaved keys, null, empty and binary values).
 */
function toKafkajsHeaders(headers: readonly Header[]): RecordHeader[] {
  return headers.map(({ key, value }) => ({ key, value }));
}

/** A legacy (magic 0/1) message has no headers. */
function fromKafkajsHeaders(message: KafkaMessage): Header[] {
  return message.headerList ? message.headerList.map(({ key, value }) => ({ key, value })) : [];
}

/** Records grouped per topic, order kept within each topic. */
function byTopic(records: OutRecord[]) {
  const groups = new Map<string, OutRecord[]>();
  for (const r of records) {
    const list = groups.get(r.topic) ?? [];
    list.push(r);
    groups.set(r.topic, list);
  }
  return [...groups].map(([topic, list]) => ({ topic, messages: list.map((r) => ({ key: r.key, value: r.value, headers: toKafkajsHeaders(r.headers) })) }));
}

const TOO_LARGE = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);

function producerPort(producer: Producer, limits: TopicLimits): ProducerPort {
  const inChunks = (records: OutRecord[], send: (chunk: OutRecord[]) => Promise<unknown>) =>
    sendInChunks(
      records,
      (t) => limits.maxMessageBytes(t),
      send,
      (e) => TOO_LARGE.has((e as KafkaError).code),
      (t) => limits.forget(t),
    );
  return {
    async transaction(): Promise<Transaction> {
      const tx = await kafkajsCall('begin transaction', () => producer.transaction());
      return {
        send: (records) => inChunks(records, (chunk) => kafkajsCall('send', () => tx.sendBatch({ topicMessages: byTopic(chunk) }))),
        async sendOffsets(consumerGroupId, topic, partition, offset) {
          await kafkajsCall('send offsets', () => tx.sendOffsets({ consumerGroupId, topics: [{ topic, partitions: [{ partition, offset }] }] }));
        },
        commit: () => kafkajsCall('commit', () => tx.commit()),
        abort: () => kafkajsCall('abort', () => tx.abort()),
      };
    },
    send: (records) => inChunks(records, (chunk) => kafkajsCall('send', () => producer.sendBatch({ topicMessages: byTopic(chunk), acks: -1 }))),
    disconnect: () => kafkajsCall('producer disconnect', () => producer.disconnect()),
  };
}

function consumerPort(consumer: Consumer, concurrency: number): ConsumerPort {
  let connected: Promise<void> | undefined;
  const connect = () => (connected ??= kafkajsCall('consumer connect', () => consumer.connect()));
  return {
    async subscribe(topics, fromBeginning = true) {
      await connect();
      await kafkajsCall('subscribe', () => consumer.subscribe({ topics: topics instanceof RegExp ? [topics] : [...topics], fromBeginning }));
    },
    async run(handler, _lookAhead, caughtUp) {
      await connect();
      const ends = caughtUp ? caughtUpEnds(consumer, caughtUp) : undefined;
      await kafkajsCall('consumer run', () =>
        consumer.run({
          autoCommit: false,
          partitionsConsumedConcurrently: concurrency,
          eachBatch: async ({ batch, heartbeat, isRunning, isStale }) => {
            if (!isRunning() || isStale() || batch.messages.length === 0) return;
            const records: InRecord[] = batch.messages.map((m) => ({
              topic: batch.topic,
              partition: batch.partition,
              offset: m.offset,
              key: m.key,
              value: m.value,
              headers: fromKafkajsHeaders(m),
              timestamp: m.timestamp,
            }));
            const b: Batch = { topic: batch.topic, partition: batch.partition, records, highWatermark: batch.highWatermark, ...batchEnd(batch) };
            await ends?.beforeBatch(batch.topic, batch.partition);
            // kafkajs decides on retries and restarts by its own error classes: it gets them back
            await handler(b, () => kafkajsCall('heartbeat', heartbeat)).catch((e: unknown) => {
              throw toKafkajs(e);
            });
          },
        }),
      );
    },
    async commitOffsets(topic, partition, offset) {
      await kafkajsCall('commit offsets', () => consumer.commitOffsets([{ topic, partition, offset }]));
    },
    async disconnect() {
      await kafkajsCall('consumer disconnect', () => consumer.disconnect());
    },
    on(events) {
      if (events.assigned) consumer.on(consumer.events.GROUP_JOIN, (e) => events.assigned!(e.payload.memberAssignment));
      if (events.fetched) consumer.on(consumer.events.FETCH, () => events.fetched!());
      if (events.crashed) consumer.on(consumer.events.CRASH, (e) => events.crashed!(fromKafkajs(e.payload.error, 'consumer') as Error, e.payload.restart));
    },
  };
}

/**
 * Where the consumer's position is after a batch: kafkajs resolves the batch's last offset —
 * control records (transaction markers) and aborted records the batch held behind its last
 * delivered record included — once the handler returned, and fetches from there.
 */
function batchEnd(batch: KafkajsBatch): { end?: string } {
  const last = BigInt(batch.messages.at(-1)!.offset);
  const end = BigInt(batch.lastOffset()) + 1n;
  return end > last + 1n ? { end: end.toString() } : {};
}

/**
 * Caught-up partitions for kafkajs: a fetch that held only control records and aborted records
 * never reaches eachBatch — kafkajs resolves its offsets and ends the batch (END_BATCH_PROCESS,
 * batchSize 0). Its end is reported to `caughtUp`, one call at a time per partition, and tried
 * again at each later fetch until it succeeds or a batch of the partition supersedes it; a batch
 * waits for the call in flight (so no commit of it runs beside a batch of its partition).
 */
function caughtUpEnds(consumer: Consumer, caughtUp: CaughtUp): { beforeBatch(topic: string, partition: number): Promise<void> } {
  const ends = new Map<string, Parameters<CaughtUp>[0]>();
  const inFlight = new Map<string, Promise<void>>();
  const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;
  const report = (key: string) => {
    const at = ends.get(key);
    if (!at || inFlight.has(key)) return;
    const call = caughtUp(at)
      .then(
        () => void (ends.get(key) === at && ends.delete(key)),
        () => undefined,
      )
      .finally(() => inFlight.delete(key));
    inFlight.set(key, call);
  };
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    // only a batch filtered to nothing (firstOffset null: nothing at or past the fetch offset)
    if (payload.batchSize !== 0 || (payload.firstOffset as string | null) === null) return;
    const key = keyOf(payload.topic, payload.partition);
    ends.set(key, {
      topic: payload.topic,
      partition: payload.partition,
      offset: (BigInt(payload.lastOffset) + 1n).toString(),
      highWatermark: payload.highWatermark,
    });
    report(key);
  });
  consumer.on(consumer.events.FETCH, () => {
    for (const key of ends.keys()) report(key);
  });
  consumer.on(consumer.events.GROUP_JOIN, () => ends.clear());
  return {
    async beforeBatch(topic, partition) {
      const key = keyOf(topic, partition);
      ends.delete(key);
      await inFlight.get(key);
    },
  };
}
