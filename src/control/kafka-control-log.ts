import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, type Admin, type Consumer, type Producer } from 'kafkajs';
import { VeilError } from '../engine/index.ts';
import { fetchTopicOffsetsOnceLed } from '../kafka-admin/index.ts';
import { ControlState, parseWrite, recordKey, type Accepted, type ControlWrite, type History } from './control-log.ts';
import { ControlError } from './errors.ts';

export interface KafkaControlLogOptions {
  brokers: string[];
  /** one partition, compacted (created so when absent) */
  topic: string;
  /** told every accepted write in log order, before appends waiting on it return (the data-dir mirror) */
  onAccepted?: (entry: Accepted) => Promise<void> | void;
  /** how long an append waits to read its own write back (default 30 s) */
  appendTimeoutMs?: number;
  /** replication factor when the topic is created (default: the broker's); an existing topic with fewer replicas is warned about */
  replicationFactor?: number;
  /** min.insync.replicas when the topic is created (default: the broker's); an existing topic with fewer is warned about */
  minInsyncReplicas?: number;
  /** what an operator should know of the topic's settings (said once at start) */
  warn?: (message: string) => void;
}

/**
 * The control store on Kafka, the way Schema Registry keeps `_schemas`: one compacted topic of one
 * partition. Every process reads it from the beginning at start and then follows it (a consumer of
 * its own throwaway group; nothing is committed), resolving it with ControlState. An append names
 * the head it was based on, is produced (idempotent, acks=all), and returns once this process has
 * read its own write back: accepted (its number), or undefined when another write got there first
 * (its record is then tombstoned, so compaction removes it).
 */
export class KafkaControlLog {
  readonly state = new ControlState();
  private readonly options: KafkaControlLogOptions;
  private readonly kafka: Kafka;
  private admin?: Admin;
  private consumer?: Consumer;
  private producer?: Producer;
  private applied = -1;
  /** an accepted write whose onAccepted failed: the consumer delivers its record again */
  private unmirrored?: { offset: number; entry: Accepted };
  private waiters: { offset: number; resolve: () => void }[] = [];
  private readonly groupId = `veil-control-${randomUUID()}`;
  /** why the topic is no longer followed (its consumer stopped for good), for health */
  private down?: string;

  private constructor(options: KafkaControlLogOptions) {
    this.options = options;
    this.kafka = new Kafka({ clientId: 'veil-control', brokers: options.brokers, logLevel: logLevel.NOTHING });
  }

  /** Connects, creates the topic when absent, and reads it up to its end as of now. */
  static async open(options: KafkaControlLogOptions): Promise<KafkaControlLog> {
    const log = new KafkaControlLog(options);
    try {
      await log.start();
    } catch (e) {
      await log.close();
      if (e instanceof VeilError) throw e;
      throw new ControlError('CONTROL_STORE_UNAVAILABLE', `control store topic ${options.topic} on ${options.brokers.join(',')} cannot be read (${(e as Error).name})`, { cause: e });
    }
    return log;
  }

  /** Whether this process still follows the topic: a reader that stopped serves a history that may be stale. */
  status(): { following: boolean; reason?: string } {
    return this.down ? { following: false, reason: this.down } : { following: true };
  }

  head(history: History): number {
    return this.state.head(history);
  }

  /** Appends a write based on `basedOn` (authenticated by `sign`); the accepted entry, or undefined when it lost the race. */
  async append(history: History, basedOn: number, body: string, meta?: ControlWrite['meta'], sign?: (w: ControlWrite) => ControlWrite['auth']): Promise<Accepted | undefined> {
    const unsigned: ControlWrite = { v: 1, history, basedOn, writer: randomUUID(), at: new Date().toISOString(), body, ...(meta ? { meta } : {}) };
    const auth = sign?.(unsigned);
    const write: ControlWrite = auth ? { ...unsigned, auth } : unsigned;
    const key = recordKey(write);
    if (this.down) throw new ControlError('CONTROL_STORE_UNAVAILABLE', `control store topic ${this.options.topic} is not being followed (${this.down}): nothing was written`);
    const [sent] = await this.producer!.send({ topic: this.options.topic, acks: -1, messages: [{ key, value: JSON.stringify(write) }] }).catch((e: unknown) => {
      // not written, or not known to be: the caller may try again (a retry is a new write on the head it then sees)
      throw new ControlError('CONTROL_STORE_UNAVAILABLE', `control store topic ${this.options.topic} on ${this.options.brokers.join(',')} did not take the write (${(e as Error).name})`, { cause: e });
    });
    await this.readUpTo(Number(sent!.baseOffset));
    const accepted = this.state.wasAccepted(key);
    if (!accepted) await this.producer!.send({ topic: this.options.topic, acks: -1, messages: [{ key, value: null }] }).catch(() => undefined);
    return accepted;
  }

  async close(): Promise<void> {
    await this.consumer?.disconnect().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
    await this.admin?.deleteGroups([this.groupId]).catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
  }

  /**
   * A topic veil did not create (or created with other settings) is used as it is, but what would
   * lose or reorder history is said: fewer replicas or in-sync replicas than asked, or a cleanup
   * policy that deletes accepted versions by age.
   */
  private async checkExisting(): Promise<void> {
    const { topic, replicationFactor, minInsyncReplicas, warn } = this.options;
    if (!warn) return;
    const [metadata, configs] = await Promise.all([
      this.admin!.fetchTopicMetadata({ topics: [topic] }),
      this.admin!.describeConfigs({ includeSynonyms: false, resources: [{ type: 2 /* TOPIC */, name: topic, configNames: ['cleanup.policy', 'min.insync.replicas'] }] }),
    ]);
    const replicas = metadata.topics[0]?.partitions[0]?.replicas.length ?? 0;
    const entry = (name: string) => configs.resources[0]?.configEntries.find((e) => e.configName === name)?.configValue;
    const isr = Number(entry('min.insync.replicas') ?? 1);
    if (replicationFactor && replicas < replicationFactor) warn(`control store topic ${topic} has ${replicas} replica(s), fewer than VEIL_CONTROL_REPLICATION_FACTOR=${replicationFactor}: it exists already, so it is not changed (kafka-reassign-partitions.sh adds replicas)`);
    if (minInsyncReplicas && isr < minInsyncReplicas) warn(`control store topic ${topic} has min.insync.replicas=${isr}, fewer than VEIL_CONTROL_MIN_INSYNC_REPLICAS=${minInsyncReplicas}: a write may be acknowledged by fewer brokers than asked (kafka-configs.sh --alter sets it)`);
    if (entry('cleanup.policy') !== 'compact') warn(`control store topic ${topic} has cleanup.policy=${entry('cleanup.policy') ?? 'unknown'}, not compact: retention may delete accepted versions, and a process started after that would not see them`);
  }

  private async start(): Promise<void> {
    const { topic } = this.options;
    this.admin = this.kafka.admin();
    await this.admin.connect();
    const { replicationFactor, minInsyncReplicas } = this.options;
    const created = await this.admin.createTopics({
      waitForLeaders: true,
      topics: [{
        topic, numPartitions: 1, ...(replicationFactor ? { replicationFactor } : {}),
        configEntries: [{ name: 'cleanup.policy', value: 'compact' }, ...(minInsyncReplicas ? [{ name: 'min.insync.replicas', value: String(minInsyncReplicas) }] : [])],
      }],
    });
    if (!created) await this.checkExisting();
    const offsets = await fetchTopicOffsetsOnceLed(this.admin, topic);
    if (offsets.length !== 1) throw new VeilError('CONFIG_INVALID', `control store topic ${topic} has ${offsets.length} partitions; it must have exactly one (its order is the history's)`);
    const end = Number(offsets[0]!.high) - 1;
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await this.producer.connect();
    this.consumer = this.kafka.consumer({ groupId: this.groupId, readUncommitted: false });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic, fromBeginning: true });
    // kafkajs restarts a consumer after a retriable crash by itself; one it does not restart is reported
    this.consumer.on(this.consumer.events.CRASH, (e) => {
      this.down = e.payload.restart ? undefined : `its reader stopped: ${e.payload.error.name}`;
    });
    this.consumer.on(this.consumer.events.FETCH, () => (this.down = undefined));
    await this.consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        const offset = Number(message.offset);
        if (offset <= this.applied) return;
        // a record delivered again after its mirror failed: mirror it again, do not apply it twice
        let entry = this.unmirrored?.offset === offset ? this.unmirrored.entry : undefined;
        if (!entry) {
          const write = parseWrite(message.value);
          entry = write && this.state.apply(write);
        }
        if (entry) {
          this.unmirrored = { offset, entry };
          await this.options.onAccepted?.(entry);
          this.unmirrored = undefined;
        }
        this.applied = offset;
        this.release();
      },
    });
    await this.readUpTo(end);
  }

  /** Resolves once the record at `offset` (and everything before it) has been applied. */
  private readUpTo(offset: number): Promise<void> {
    if (this.applied >= offset) return Promise.resolve();
    const timeoutMs = this.options.appendTimeoutMs ?? 30_000;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new ControlError('CONTROL_STORE_UNAVAILABLE', `control store topic ${this.options.topic}: offset ${offset} not read back within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.waiters.push({ offset, resolve: done });
    });
  }

  private release(): void {
    const ready = this.waiters.filter((w) => w.offset <= this.applied);
    this.waiters = this.waiters.filter((w) => w.offset > this.applied);
    for (const w of ready) w.resolve();
  }
}
