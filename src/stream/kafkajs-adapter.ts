import { Kafka, logLevel, Partitioners, type Consumer, type Producer, type IHeaders, type KafkaConfig } from 'kafkajs';
import type { Batch, ConsumerPort, Headers, InRecord, KafkaPort, OutRecord, ProducerPort, Transaction } from './ports.ts';

/** Log lines from kafkajs, never message contents (kafkajs does not log payloads). */
export type KafkaLog = (level: 'error' | 'warn' | 'info', message: string, extra: Record<string, unknown>) => void;

const LEVELS: Record<number, 'error' | 'warn' | 'info'> = { [logLevel.ERROR]: 'error', [logLevel.WARN]: 'warn', [logLevel.INFO]: 'info' };

/**
 * KafkaPort over kafkajs. Transactional producers follow kafkajs' Transactions.md: idempotent,
 * maxInFlightRequests 1, one transactional id per input partition (kafkajs has no KIP-447, so
 * zombie fencing comes from the id, not from the group generation).
 */
export function kafkajsPort(options: { brokers: string[]; clientId: string; log?: KafkaLog; config?: Partial<KafkaConfig>; sessionTimeoutMs?: number }): KafkaPort {
  const sessionTimeout = options.sessionTimeoutMs ?? 30_000;
  const kafka = new Kafka({
    clientId: options.clientId,
    brokers: options.brokers,
    logLevel: logLevel.WARN,
    logCreator: () => ({ level, log }) => {
      const { message, ...extra } = log;
      options.log?.(LEVELS[level] ?? 'info', String(message), { error: extra.error, broker: extra.broker, groupId: extra.groupId });
    },
    ...options.config,
  });
  return {
    consumer: ({ groupId, readCommitted }) => consumerPort(kafka.consumer({
      groupId, readUncommitted: !readCommitted, allowAutoTopicCreation: false,
      // a failed batch (even a non-retriable error such as a fenced producer) restarts the
      // consumer from the committed offsets instead of leaving the group silently stopped
      retry: { retries: 10, restartOnFailure: async () => true },
      sessionTimeout, heartbeatInterval: Math.max(500, Math.floor(sessionTimeout / 10)),
    })),
    async producer({ transactionalId }) {
      // Java-compatible murmur2 partitioning, so veil and Java producers agree on key → partition
      const common = { idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner };
      const producer = kafka.producer(transactionalId ? { ...common, transactionalId, transactionTimeout: 60_000 } : common);
      await producer.connect();
      return producerPort(producer);
    },
    // consumers and producers close themselves; the client holds nothing else
    async disconnect() {},
  };
}

/**
 * Sends go out in chunks of at most this many bytes: a fetched batch grows when protected and
 * headers are added, and one oversized produce request would be refused by the broker
 * (max.message.bytes, 1 MiB by default) as a whole.
 */
const MAX_SEND_BYTES = 900 * 1024;

function sizeOf(r: OutRecord): number {
  let n = 64 + (r.key?.length ?? 0) + (r.value?.length ?? 0);
  for (const [k, v] of Object.entries(r.headers)) n += k.length + v.length + 8;
  return n;
}

/** Splits records into consecutive chunks under MAX_SEND_BYTES, keeping their order. */
function chunks(records: OutRecord[]): OutRecord[][] {
  const out: OutRecord[][] = [];
  let current: OutRecord[] = [];
  let bytes = 0;
  for (const r of records) {
    const size = sizeOf(r);
    if (current.length && bytes + size > MAX_SEND_BYTES) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(r);
    bytes += size;
  }
  if (current.length) out.push(current);
  return out;
}

function toMessages(records: OutRecord[]) {
  return records.map((r) => ({ key: r.key, value: r.value, headers: r.headers as IHeaders }));
}

/** Records grouped per topic, order kept within each topic. */
function byTopic(records: OutRecord[]): { topic: string; messages: ReturnType<typeof toMessages> }[] {
  const groups = new Map<string, OutRecord[]>();
  for (const r of records) {
    const list = groups.get(r.topic) ?? [];
    list.push(r);
    groups.set(r.topic, list);
  }
  return [...groups].map(([topic, list]) => ({ topic, messages: toMessages(list) }));
}

function producerPort(producer: Producer): ProducerPort {
  return {
    async transaction(): Promise<Transaction> {
      const tx = await producer.transaction();
      return {
        async send(records) {
          for (const chunk of chunks(records)) await tx.sendBatch({ topicMessages: byTopic(chunk) });
        },
        async sendOffsets(consumerGroupId, topic, partition, offset) {
          await tx.sendOffsets({ consumerGroupId, topics: [{ topic, partitions: [{ partition, offset }] }] });
        },
        commit: () => tx.commit(),
        abort: () => tx.abort(),
      };
    },
    async send(records) {
      for (const chunk of chunks(records)) await producer.sendBatch({ topicMessages: byTopic(chunk), acks: -1 });
    },
    disconnect: () => producer.disconnect(),
  };
}

function headersOf(raw: IHeaders | undefined): Headers {
  const out: Headers = {};
  for (const [k, v] of Object.entries(raw ?? {})) {
    if (v === undefined) continue;
    const first = Array.isArray(v) ? v[0] : v;
    if (first !== undefined) out[k] = Buffer.isBuffer(first) ? first : Buffer.from(String(first));
  }
  return out;
}

function consumerPort(consumer: Consumer): ConsumerPort {
  let connected: Promise<void> | undefined;
  const connect = () => (connected ??= consumer.connect());
  return {
    async subscribe(topics, fromBeginning = true) {
      await connect();
      await consumer.subscribe({ topics: topics instanceof RegExp ? [topics] : [...topics], fromBeginning });
    },
    async run(handler) {
      await connect();
      await consumer.run({
        autoCommit: false,
        partitionsConsumedConcurrently: 4,
        eachBatch: async ({ batch, heartbeat, isRunning, isStale }) => {
          if (!isRunning() || isStale() || batch.messages.length === 0) return;
          const records: InRecord[] = batch.messages.map((m) => ({
            topic: batch.topic, partition: batch.partition, offset: m.offset, key: m.key, value: m.value, headers: headersOf(m.headers), timestamp: m.timestamp,
          }));
          const b: Batch = { topic: batch.topic, partition: batch.partition, records, highWatermark: batch.highWatermark };
          await handler(b, heartbeat);
        },
      });
    },
    async commitOffsets(topic, partition, offset) {
      await consumer.commitOffsets([{ topic, partition, offset }]);
    },
    async disconnect() {
      await consumer.disconnect();
    },
    onCrash(listener) {
      consumer.on(consumer.events.CRASH, (e) => listener(e.payload.error));
    },
    onAssignment(listener) {
      consumer.on(consumer.events.GROUP_JOIN, (e) => listener(e.payload.memberAssignment));
    },
  };
}
