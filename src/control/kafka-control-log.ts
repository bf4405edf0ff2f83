import { randomUUID } from 'node:crypto';
import { VeilError } from '../engine/index.ts';
import { KafkaError, openCompactedTopic, type CompactedTopic, type KafkaConnection, type TopicBatch } from '../kafka/index.ts';
import { ControlState, parseWrite, recordKey, type Accepted, type ControlWrite, type History } from './control-log.ts';
import { ControlError } from './errors.ts';

export interface KafkaControlLogOptions {
  /** the control store's cluster and its security (VEIL_CONTROL_BROKERS / VEIL_CONTROL_KAFKA_*, else the main cluster's) */
  connection: KafkaConnection;
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
 * partition (src/kafka's CompactedTopic). Every process reads it from the beginning at start and
 * then follows it, resolving it with ControlState. An append names the head it was based on, is
 * produced (idempotent, acks=all), and returns once this process has read its own write back:
 * accepted (its number), or undefined when another write got there first (its record is then
 * tombstoned, so compaction removes it).
 */
export class KafkaControlLog {
  readonly state = new ControlState();
  private readonly options: KafkaControlLogOptions;
  private topic?: CompactedTopic;
  /** an accepted write whose onAccepted failed: the batch is delivered again, and it is mirrored, not applied, again */
  private unmirrored?: { offset: number; entry: Accepted };
  private applied = -1;

  private constructor(options: KafkaControlLogOptions) {
    this.options = options;
  }

  /** Connects, creates the topic when absent, and reads it up to its end as of now. */
  static async open(options: KafkaControlLogOptions): Promise<KafkaControlLog> {
    const log = new KafkaControlLog(options);
    try {
      await log.start();
    } catch (e) {
      await log.close();
      if (e instanceof VeilError) throw e;
      const why = e instanceof KafkaError && e.denied ? `${e.code}: ${e.message}` : (e as Error).name;
      throw new ControlError(
        'CONTROL_STORE_UNAVAILABLE',
        `control store topic ${options.topic} on ${options.connection.brokers.join(',')} cannot be read (${why})`,
        { cause: e },
      );
    }
    return log;
  }

  /** Whether this process still follows the topic: a reader that stopped serves a history that may be stale. */
  status(): { following: boolean; reason?: string } {
    return this.topic?.status() ?? { following: false, reason: 'not open' };
  }

  head(history: History): number {
    return this.state.head(history);
  }

  /** Appends a write based on `basedOn` (authenticated by `sign`); the accepted entry, or undefined when it lost the race. */
  async append(
    history: History,
    basedOn: number,
    body: string,
    meta?: ControlWrite['meta'],
    sign?: (w: ControlWrite) => ControlWrite['auth'],
  ): Promise<Accepted | undefined> {
    const unsigned: ControlWrite = { v: 1, history, basedOn, writer: randomUUID(), at: new Date().toISOString(), body, ...(meta ? { meta } : {}) };
    const auth = sign?.(unsigned);
    const write: ControlWrite = auth ? { ...unsigned, auth } : unsigned;
    const key = recordKey(write);
    const topic = this.topic!;
    const sent = await topic.send([{ key, value: JSON.stringify(write), partition: 0 }]).catch((e: unknown) => {
      // not written, or not known to be: the caller may try again (a retry is a new write on the head it then sees)
      throw new ControlError(
        'CONTROL_STORE_UNAVAILABLE',
        `control store topic ${this.options.topic} did not take the write (${(e as KafkaError).code ?? (e as Error).name})`,
        { cause: e },
      );
    });
    await topic.readUpTo(0, sent.offset, this.options.appendTimeoutMs ?? 30_000).catch((e: unknown) => {
      throw new ControlError(
        'CONTROL_STORE_UNAVAILABLE',
        `control store topic ${this.options.topic}: offset ${sent.offset} not read back within ${this.options.appendTimeoutMs ?? 30_000} ms`,
        { cause: e },
      );
    });
    const accepted = this.state.wasAccepted(key);
    if (!accepted) await topic.send([{ key, value: null, partition: 0 }]).catch(() => undefined);
    return accepted;
  }

  async close(): Promise<void> {
    await this.topic?.close();
  }

  private async start(): Promise<void> {
    const { connection, topic: name, replicationFactor, minInsyncReplicas, warn } = this.options;
    const { topic, ends } = await openCompactedTopic({
      connection,
      clientId: 'veil-control',
      topic: name,
      partitions: 1,
      ...(replicationFactor ? { replicationFactor } : {}),
      ...(minInsyncReplicas ? { minInsyncReplicas } : {}),
      ...(warn ? { warn } : {}),
    });
    this.topic = topic;
    if (topic.partitions !== 1)
      throw new VeilError(
        'CONFIG_INVALID',
        `control store topic ${name} has ${topic.partitions} partitions; it must have exactly one (its order is the history's)`,
      );
    await topic.follow((batch) => this.apply(batch));
    const end = ends.get(0) ?? 0;
    if (end > 0) {
      await topic.readUpTo(0, end - 1, this.options.appendTimeoutMs ?? 30_000).catch((e: unknown) => {
        throw new ControlError(
          'CONTROL_STORE_UNAVAILABLE',
          `control store topic ${name}: not read up to its end within ${this.options.appendTimeoutMs ?? 30_000} ms`,
          { cause: e },
        );
      });
    }
  }

  /** Each record in order, each write once; a write accepted but not mirrored yet is mirrored again when its batch comes again. */
  private async apply(batch: TopicBatch): Promise<void> {
    for (const record of batch.records) {
      if (record.offset <= this.applied) continue;
      let entry = this.unmirrored?.offset === record.offset ? this.unmirrored.entry : undefined;
      if (!entry) {
        const write = parseWrite(record.value);
        entry = write && this.state.apply(write);
      }
      if (entry) {
        this.unmirrored = { offset: record.offset, entry };
        await this.options.onAccepted?.(entry);
        this.unmirrored = undefined;
      }
      this.applied = record.offset;
    }
  }
}
