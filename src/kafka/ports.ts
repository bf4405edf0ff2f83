/**
 * The ports the pipelines and the responder talk to Kafka through, with two adapters behind them
 * (librdkafka-adapter.ts, kafkajs-adapter.ts). No client library's type passes them: kafkajs is
 * imported only by kafkajs-*.ts, the librdkafka binding only by librdkafka-*.ts (lint rule
 * veil/stream-front-doors), so either client, or a faster one, runs behind the same interfaces.
 */

/** One record header. Repeated keys are separate entries, in record order; a value may be null. */
export interface Header {
  key: string;
  value: Buffer | null;
}
export type Headers = readonly Header[];

/** The first value of a header (protocol headers are single-valued). */
export function headerValue(headers: Headers, key: string): Buffer | undefined {
  for (const h of headers) if (h.key === key) return h.value ?? undefined;
  return undefined;
}

/** Headers with every entry named in `names` replaced by the given ones (appended, in order). */
export function withHeaders(headers: Headers, set: Headers): Header[] {
  const names = new Set(set.map((h) => h.key));
  return [...headers.filter((h) => !names.has(h.key)), ...set];
}

export interface InRecord {
  topic: string;
  partition: number;
  /** Kafka offset as a decimal string (64-bit) */
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Headers;
  timestamp: string;
}

export interface OutRecord {
  topic: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Headers;
}

export interface Batch {
  topic: string;
  partition: number;
  records: InRecord[];
  /** the partition's high watermark when fetched, for lag */
  highWatermark: string;
  /**
   * The consumer's position after this batch, when the consumer knows it is beyond the last
   * record: the offsets between hold only what a read_committed consumer skips (transaction
   * markers, records of aborted transactions). Committing it rather than last + 1 lets the
   * group's offset reach the end of a partition written by transactions. Absent: last + 1.
   */
  end?: string;
}

/**
 * A partition the consumer caught up on: no batch of it in flight or waiting, and the consumer's
 * position (`offset`) beyond the end of every batch it handed out — the offsets between hold no
 * record a read_committed consumer delivers (transaction markers, aborted records). Never called
 * while a batch of the partition runs or waits to be tried again; a rejection is tried again
 * later. `highWatermark` is the partition's as last fetched, for lag.
 */
export type CaughtUp = (at: { topic: string; partition: number; offset: string; highWatermark: string }) => Promise<void>;

/** A Kafka transaction: sends and the consumer offsets commit or abort together. */
export interface Transaction {
  send(records: OutRecord[]): Promise<void>;
  /** commits `offset` (the next offset to read) for the group, inside the transaction */
  sendOffsets(groupId: string, topic: string, partition: number, offset: string): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

export interface ProducerPort {
  transaction(): Promise<Transaction>;
  /** non-transactional, idempotent send (at-least-once pipelines) */
  send(records: OutRecord[]): Promise<void>;
  disconnect(): Promise<void>;
}

/** What the consumer reports besides batches: group membership, fetch loop turns, crashes. */
export interface ConsumerEvents {
  /** after each (re)join of the group: the partitions this member now owns, per topic */
  assigned?(assignment: Record<string, number[]>): void;
  /** a fetch came back from the broker (also an empty one): the consumer is alive and connected */
  fetched?(): void;
  /** the consumer stopped on an error; `restarting` says whether the client restarts it */
  crashed?(error: Error, restarting: boolean): void;
}

/**
 * A hint from a consumer that runs one batch per partition at a time: `records`, fetched while
 * the partition's current batch runs, are likely its next batch. Work that does not depend on the
 * current batch's outcome may start; the batch itself still comes through the handler, or not at
 * all (a failure, a revocation), so a hint commits to nothing.
 */
export type LookAhead = (topic: string, partition: number, records: readonly InRecord[]) => void;

export interface ConsumerPort {
  /** fromBeginning (default true): a new group starts at the earliest offset, else at the latest */
  subscribe(topics: readonly string[] | RegExp, fromBeginning?: boolean): Promise<void>;
  /**
   * Runs handler per fetched batch of one partition. A throw re-delivers the batch: in memory
   * when the error is retriable, else after the consumer restarts from the committed offsets.
   */
  run(handler: (batch: Batch, heartbeat: () => Promise<void>) => Promise<void>, lookAhead?: LookAhead, caughtUp?: CaughtUp): Promise<void>;
  commitOffsets(topic: string, partition: number, offset: string): Promise<void>;
  disconnect(): Promise<void>;
  on(events: ConsumerEvents): void;
}

export interface KafkaPort {
  consumer(options: { groupId: string; readCommitted: boolean }): ConsumerPort;
  /**
   * transactionalId set: a transactional producer. Its creation (InitProducerId) fences every
   * earlier producer of that id and completes that id's pending transaction first.
   */
  producer(options: { transactionalId?: string }): Promise<ProducerPort>;
  /** the group's committed offset of a partition (the next offset to read), null if none */
  committedOffset(groupId: string, topic: string, partition: number): Promise<string | null>;
  /** the largest record batch a topic accepts (its effective max.message.bytes, or the client's own cap when lower); rejects with a retriable KafkaError (TOPIC_CONFIG_UNREADABLE) when it cannot be read */
  maxMessageBytes(topic: string): Promise<number>;
  disconnect(): Promise<void>;
}

/**
 * The log of both Kafka clients: their own lines (never record contents, which neither client
 * logs) at the level given; `extra` names brokers, groups, codes.
 */
export type KafkaLog = (level: 'error' | 'warn' | 'info', message: string, extra: Record<string, unknown>) => void;
