/**
 * The ports the pipeline logic talks to; only kafkajs-adapter.ts imports kafkajs, so a faster
 * client can be measured behind the same interfaces.
 */
export type Headers = Record<string, Buffer>;

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
}

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

export interface ConsumerPort {
  /** fromBeginning (default true): a new group starts at the earliest offset, else at the latest */
  subscribe(topics: readonly string[] | RegExp, fromBeginning?: boolean): Promise<void>;
  /** runs handler per fetched batch of one partition; a throw re-delivers from the last committed offset */
  run(handler: (batch: Batch, heartbeat: () => Promise<void>) => Promise<void>): Promise<void>;
  commitOffsets(topic: string, partition: number, offset: string): Promise<void>;
  disconnect(): Promise<void>;
  onCrash(listener: (error: Error) => void): void;
  /** after each rebalance: the partitions this member now owns, per topic */
  onAssignment(listener: (assignment: Record<string, number[]>) => void): void;
}

export interface KafkaPort {
  consumer(options: { groupId: string; readCommitted: boolean }): ConsumerPort;
  /** transactionalId set: a transactional producer (fencing earlier ones of the same id) */
  producer(options: { transactionalId?: string }): Promise<ProducerPort>;
  disconnect(): Promise<void>;
}

/** Confluent-API schema registry: raw schema text by id, registration by subject. */
export interface SchemaRegistryPort {
  schemaById(id: number): Promise<string>;
  register(subject: string, schema: string): Promise<number>;
}
