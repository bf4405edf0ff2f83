import { randomUUID } from 'node:crypto';
import type { Admin, Consumer, Producer } from 'kafkajs';
import type { KafkaConnection } from './client-settings.ts';
import { reportDenied } from './denied.ts';
import { kafkajsClient } from './kafkajs-client.ts';
import { fromKafkajs } from './kafkajs-errors.ts';
import { fetchTopicOffsetsOnceLed } from './kafkajs-topic-offsets.ts';
import { KafkaError } from './kafka-error.ts';

export interface CompactedTopicOptions {
  connection: KafkaConnection;
  /** the clients' id and the prefix of the throwaway group: veil-control, veil-subjects */
  clientId: string;
  topic: string;
  /** partitions when the topic is created (default 1) */
  partitions?: number;
  /** replication factor and min.insync.replicas when it is created (default: the broker's); an existing topic with fewer is warned about */
  replicationFactor?: number;
  minInsyncReplicas?: number;
  /** more topic settings when it is created (tests: small segments) */
  topicConfig?: Record<string, string>;
  /** the consumer's fetch size (default kafkajs') */
  maxBytes?: number;
  /** what an operator should know of an existing topic's settings (said once at open) */
  warn?: (message: string) => void;
}

/** One record as the log keeps it. */
export interface TopicRecord {
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  timestamp: number;
}

/** A fetched run of one partition's records, and the offset after it (compacted-away offsets included). */
export interface TopicBatch {
  partition: number;
  records: TopicRecord[];
  next: number;
}

/**
 * A compacted topic that every process reads from the beginning (or from where its own view
 * stopped) and follows, each with a consumer of a throwaway group that commits nothing and is
 * deleted at close, and appends to with an idempotent producer (acks=all) — the way Schema
 * Registry keeps `_schemas`. What the control store (src/control) and the subject-key store
 * (src/subjects) share: the topic's creation, its ends, following it batch by batch, waiting for
 * an offset to be applied, and stopping. What a record means is theirs.
 */
export class CompactedTopic {
  /** the topic's partitions, known once open */
  partitions = 0;
  /** whether this open created the topic */
  created = false;
  private readonly options: CompactedTopicOptions;
  private readonly admin: Admin;
  private consumer?: Consumer;
  private producer?: Producer;
  private readonly groupId: string;
  private readonly applied = new Map<number, number>();
  private waiters: { partition: number; next: number; resolve: () => void }[] = [];
  private afterBatch?: () => void;
  /** why the topic is no longer followed (its reader stopped for good) */
  private down?: string;

  private constructor(options: CompactedTopicOptions) {
    this.options = options;
    const kafka = kafkajsClient(options.connection, options.clientId);
    this.admin = kafka.admin();
    this.producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    this.consumer = kafka.consumer({
      groupId: (this.groupId = `${options.clientId}-${randomUUID()}`),
      readUncommitted: false,
      ...(options.maxBytes ? { maxBytes: options.maxBytes } : {}),
    });
  }

  /** Connects, creates the topic when absent (compacted), and reads its ends; nothing is followed yet. */
  static async open(options: CompactedTopicOptions): Promise<{ topic: CompactedTopic; ends: Map<number, number> }> {
    const topic = new CompactedTopic(options);
    try {
      await topic.admin.connect();
      topic.created = await topic.create();
      if (!topic.created && options.warn) await topic.checkExisting(options.warn);
      const ends = await topic.ends({ justCreated: true });
      topic.partitions = ends.size;
      return { topic, ends };
    } catch (e) {
      await topic.close();
      throw reportDenied(fromKafkajs(e, `topic ${options.topic}`));
    }
  }

  /**
   * Follows the topic from `from` (the next offset per partition; others from the beginning):
   * `apply` gets each batch of records not applied yet, in order; once it resolved, the batch
   * counts as applied (waiters are released, then `afterBatch`). A throw delivers the batch again.
   */
  async follow(apply: (batch: TopicBatch) => Promise<void> | void, from: ReadonlyMap<number, number> = new Map(), afterBatch?: () => void): Promise<void> {
    const { topic } = this.options;
    for (const [partition, next] of from) this.applied.set(partition, next);
    this.afterBatch = afterBatch;
    await this.producer!.connect();
    await this.consumer!.connect();
    await this.consumer!.subscribe({ topic, fromBeginning: true });
    // kafkajs restarts a consumer after a retriable crash by itself; one it does not restart is reported
    this.consumer!.on(this.consumer!.events.CRASH, (e) => {
      if (e.payload.restart) return;
      this.down = `its reader stopped: ${e.payload.error.name}`;
      reportDenied(fromKafkajs(e.payload.error, `topic ${topic}`));
    });
    this.consumer!.on(this.consumer!.events.FETCH, () => (this.down = undefined));
    await this.consumer!.run({
      autoCommit: false,
      eachBatchAutoResolve: true,
      eachBatch: async ({ batch }) => {
        const start = this.applied.get(batch.partition) ?? 0;
        const records = batch.messages
          .filter((m) => Number(m.offset) >= start)
          .map((m) => ({ offset: Number(m.offset), key: m.key, value: m.value, timestamp: Number(m.timestamp) }));
        // offsets a compaction removed count as read: the batch's last offset, not its last record's
        const next = Math.max(start, batch.messages.length > 0 ? Number(batch.lastOffset()) + 1 : start);
        if (next === start) return;
        await apply({ partition: batch.partition, records, next });
        this.applied.set(batch.partition, next);
        this.release();
      },
    });
    for (const [partition, next] of from) this.consumer!.seek({ topic, partition, offset: String(next) });
  }

  /** The next offset to apply of a partition (0: nothing applied). */
  appliedUpTo(partition: number): number {
    return this.applied.get(partition) ?? 0;
  }

  /** Resolves once the record at `offset` of `partition` (and all before it) is applied; rejects with a retriable KafkaError after `timeoutMs`. */
  readUpTo(partition: number, offset: number, timeoutMs: number): Promise<void> {
    if (this.appliedUpTo(partition) > offset) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(
          new KafkaError(
            'READ_BACK_TIMEOUT',
            `topic ${this.options.topic}: offset ${offset} of partition ${partition} not read back within ${timeoutMs} ms`,
            true,
          ),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.waiters.push({ partition, next: offset + 1, resolve: done });
    });
  }

  /** Sends records (acks=all, one request); the partition and offset of the last one. Refused while the topic is not followed. */
  async send(messages: { key: string | Buffer; value: string | Buffer | null; partition?: number }[]): Promise<{ partition: number; offset: number }> {
    const { topic } = this.options;
    if (this.down) throw new KafkaError('NOT_FOLLOWING', `topic ${topic} is not being followed (${this.down}): nothing was written`, false);
    try {
      const [sent] = await this.producer!.send({ topic, acks: -1, messages });
      return { partition: sent!.partition, offset: Number(sent!.baseOffset) + messages.length - 1 };
    } catch (e) {
      throw reportDenied(fromKafkajs(e, `send to topic ${topic}`));
    }
  }

  /** The topic's end offsets (the next offset to be written) by partition. */
  async ends({ justCreated = false } = {}): Promise<Map<number, number>> {
    const offsets = justCreated ? await fetchTopicOffsetsOnceLed(this.admin, this.options.topic) : await this.admin.fetchTopicOffsets(this.options.topic);
    return new Map(offsets.map((o) => [o.partition, Number(o.high)]));
  }

  /** Whether this process still follows the topic: a reader that stopped serves a view that may be stale. */
  status(): { following: boolean; reason?: string } {
    return this.down ? { following: false, reason: this.down } : { following: true };
  }

  async close(): Promise<void> {
    await this.consumer?.disconnect().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
    await this.admin.deleteGroups([this.groupId]).catch(() => undefined);
    await this.admin.disconnect().catch(() => undefined);
  }

  private release(): void {
    const ready = this.waiters.filter((w) => this.appliedUpTo(w.partition) >= w.next);
    this.waiters = this.waiters.filter((w) => this.appliedUpTo(w.partition) < w.next);
    for (const w of ready) w.resolve();
    this.afterBatch?.();
  }

  /** Creates the topic unless it exists: a principal without Create on it can use one made beforehand (docs/kafka-security.md). */
  private async create(): Promise<boolean> {
    const { topic, partitions, replicationFactor, minInsyncReplicas, topicConfig } = this.options;
    if ((await this.admin.listTopics()).includes(topic)) return false;
    const config = { 'cleanup.policy': 'compact', ...(minInsyncReplicas ? { 'min.insync.replicas': String(minInsyncReplicas) } : {}), ...topicConfig };
    try {
      return await this.admin.createTopics({
        waitForLeaders: true,
        topics: [
          {
            topic,
            numPartitions: partitions ?? 1,
            ...(replicationFactor ? { replicationFactor } : {}),
            configEntries: Object.entries(config).map(([name, value]) => ({ name, value })),
          },
        ],
      });
    } catch (e) {
      // Created, but kafkajs's wait for its leaders gave up at the first UNKNOWN_TOPIC_OR_PARTITION,
      // which a broker busy creating other partitions answers for a while: the open's
      // ends({ justCreated }) waits until the topic is led (and fails if it never is). Only this
      // answer: where kafkajs's wait succeeds, the open runs as it always did.
      if ((e as { type?: unknown }).type === 'UNKNOWN_TOPIC_OR_PARTITION') return true;
      throw e;
    }
  }

  /**
   * A topic veil did not create (or created with other settings) is used as it is, but what would
   * lose or reorder what it holds is said: fewer replicas or in-sync replicas than asked, or a
   * cleanup policy that deletes records by age.
   */
  private async checkExisting(warn: (message: string) => void): Promise<void> {
    const { topic, replicationFactor, minInsyncReplicas } = this.options;
    const [metadata, configs] = await Promise.all([
      this.admin.fetchTopicMetadata({ topics: [topic] }),
      this.admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: 2 /* TOPIC */, name: topic, configNames: ['cleanup.policy', 'min.insync.replicas'] }],
      }),
    ]);
    const replicas = metadata.topics[0]?.partitions[0]?.replicas.length ?? 0;
    const entry = (name: string) => configs.resources[0]?.configEntries.find((e) => e.configName === name)?.configValue;
    const isr = Number(entry('min.insync.replicas') ?? 1);
    if (replicationFactor && replicas < replicationFactor)
      warn(
        `topic ${topic} has ${replicas} replica(s), fewer than VEIL_CONTROL_REPLICATION_FACTOR=${replicationFactor}: it exists already, so it is not changed (kafka-reassign-partitions.sh adds replicas)`,
      );
    if (minInsyncReplicas && isr < minInsyncReplicas)
      warn(
        `topic ${topic} has min.insync.replicas=${isr}, fewer than VEIL_CONTROL_MIN_INSYNC_REPLICAS=${minInsyncReplicas}: a write may be acknowledged by fewer brokers than asked (kafka-configs.sh --alter sets it)`,
      );
    if (entry('cleanup.policy') !== 'compact')
      warn(
        `topic ${topic} has cleanup.policy=${entry('cleanup.policy') ?? 'unknown'}, not compact: retention may delete what it holds, and a process started after that would not see it`,
      );
  }
}
