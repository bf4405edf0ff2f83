import { randomUUID } from 'node:crypto';
import { openCompactedTopic, type CompactedTopic, type KafkaConnection, type TopicBatch } from '../kafka/index.ts';
import { wrappedKeyId } from '../keystore/index.ts';
import { SubjectsError } from './errors.ts';
import { SubjectDb } from './subject-db.ts';
import { parseRecord } from './subject-records.ts';
import { applyEvent } from './subject-state.ts';

export interface KafkaSubjectLogOptions {
  /** the subject-key topic's cluster and its security (VEIL_SUBJECT_BROKERS / VEIL_SUBJECT_KAFKA_*, else the control store's) */
  connection: KafkaConnection;
  topic: string;
  /** partitions when the topic is created (default 1) */
  partitions?: number;
  replicationFactor?: number;
  minInsyncReplicas?: number;
  /** more topic settings when it is created (tests: small segments) */
  topicConfig?: Record<string, string>;
  /** how long a write waits to be read back (default 30 s) */
  appendTimeoutMs?: number;
  /** how often the topic's end is fetched to confirm this view is current (default 250 ms) */
  pollMs?: number;
  now?: () => number;
}

export type Applied = (ref: Buffer, kind: 'created' | 'erased', gen: number) => void;

/**
 * This process's view of the subject-key topic (src/kafka's CompactedTopic): every record applied
 * to a SubjectDb (its own file) with the next offset of each partition in the same transaction,
 * so a restart resumes where it stopped — reading what it missed, erasures included, before it
 * serves — instead of reading the topic again. Every `pollMs` the topic's end offsets are fetched;
 * once the view has applied up to them, `confirmedAt` becomes the fetch's start: a view current as
 * of then.
 */
export class KafkaSubjectLog {
  readonly db: SubjectDb;
  readonly writer = randomUUID();
  partitions = 1;
  /** when this view was last known to hold every record written before (ms); 0: never */
  confirmedAt = 0;
  private readonly options: KafkaSubjectLogOptions;
  private topic?: CompactedTopic;
  /** fetched ends not yet reached, oldest first */
  private confirming: { startedAt: number; ends: Map<number, number> }[] = [];
  private timer?: NodeJS.Timeout;
  private polling = false;
  private readonly now: () => number;
  private readonly appliedListeners: Applied[] = [];

  constructor(options: KafkaSubjectLogOptions, viewPath: string) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.db = new SubjectDb(viewPath, false);
  }

  /** why the topic is no longer followed (its reader stopped for good), else undefined */
  get down(): string | undefined {
    const status = this.topic?.status();
    return status && !status.following ? status.reason : undefined;
  }

  onApplied(listener: Applied): void {
    this.appliedListeners.push(listener);
  }

  /** Connects, creates the topic when absent, resumes from the stored offsets and reads up to the topic's end. */
  async start(): Promise<void> {
    try {
      await this.connect();
    } catch (e) {
      await this.close();
      if (e instanceof SubjectsError) throw e;
      const refused = (e as { denied?: boolean }).denied ? `${(e as { code?: string }).code}: ${(e as Error).message}` : (e as Error).name;
      throw new SubjectsError(
        'SUBJECT_STORE_UNAVAILABLE',
        `subject-key topic ${this.options.topic} on ${this.options.connection.brokers.join(',')} cannot be read (${refused})`,
        { cause: e },
      );
    }
  }

  /** Resolves once the record at `offset` of `partition` (and all before it) is applied. */
  async readUpTo(partition: number, offset: number): Promise<void> {
    const timeoutMs = this.options.appendTimeoutMs ?? 30_000;
    await this.topic!.readUpTo(partition, offset, timeoutMs).catch((e: unknown) => {
      throw new SubjectsError(
        'SUBJECT_STORE_UNAVAILABLE',
        `subject-key topic ${this.options.topic}: offset ${offset} of partition ${partition} not read back within ${timeoutMs} ms`,
        { cause: e },
      );
    });
  }

  /** Sends records of one partition in one request (acks=all); the offset of the last one. */
  async send(partition: number, messages: { key: string; value: string | null }[]): Promise<number> {
    const down = this.down;
    if (down)
      throw new SubjectsError('SUBJECT_STORE_UNAVAILABLE', `subject-key topic ${this.options.topic} is not being followed (${down}): nothing was written`);
    const sent = await this.topic!.send(messages.map((m) => ({ ...m, partition }))).catch((e: unknown) => {
      throw new SubjectsError(
        'SUBJECT_STORE_UNAVAILABLE',
        `subject-key topic ${this.options.topic} did not take the write (${(e as { code?: string }).code ?? (e as Error).name})`,
        { cause: e },
      );
    });
    return sent.offset;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.topic?.close();
    this.db.close();
  }

  private async connect(): Promise<void> {
    const { connection, topic: name, partitions, replicationFactor, minInsyncReplicas, topicConfig } = this.options;
    const { topic, ends } = await openCompactedTopic({
      connection,
      clientId: 'veil-subjects',
      topic: name,
      partitions: partitions ?? 1,
      maxBytes: 50 * 1024 * 1024,
      ...(replicationFactor ? { replicationFactor } : {}),
      ...(minInsyncReplicas ? { minInsyncReplicas } : {}),
      ...(topicConfig ? { topicConfig } : {}),
    });
    this.topic = topic;
    this.partitions = ends.size;
    const from = new Map<number, number>();
    for (const [partition, next] of this.db.offsets()) {
      if (next > (ends.get(partition) ?? 0))
        throw new SubjectsError(
          'SUBJECT_STORE_UNAVAILABLE',
          `the view ${this.db.path} is ahead of subject-key topic ${name} (partition ${partition}): it was made from another topic; remove it and start again`,
        );
      from.set(partition, next);
    }
    await topic.follow(
      (batch) => this.applyBatch(batch),
      from,
      () => this.confirm(),
    );
    const startedAt = this.now();
    await Promise.all([...ends].filter(([, end]) => end > 0).map(([partition, end]) => this.readUpTo(partition, end - 1)));
    this.confirmedAt = startedAt;
    this.timer = setInterval(() => void this.poll(), this.options.pollMs ?? 250);
    this.timer.unref();
  }

  /** One batch in one transaction: states, erasure list and the partition's next offset. */
  private async applyBatch(batch: TopicBatch): Promise<void> {
    const told: [Buffer, 'created' | 'erased', number][] = [];
    const sweep = new Set<string>();
    this.db.transaction(() => {
      for (const message of batch.records) {
        const record = parseRecord(message.key, message.value, message.timestamp);
        if (!record) continue;
        const ref = Buffer.from(record.ref, 'hex');
        const before = this.db.get(ref);
        const result = applyEvent(before, record.event, wrappedKeyId);
        this.db.put(ref, result.state, result.change === 'erased');
        if (result.change) told.push([ref, result.change, result.state.gen]);
        if (result.stray === 'erased-generation' && record.event.kind === 'key') sweep.add(record.event.record!);
        if (result.change === 'erased' && before?.record) sweep.add(before.record);
        if (record.event.kind === 'tombstone') sweep.delete(record.event.record);
      }
      this.db.setOffset(batch.partition, batch.next);
    });
    if (told.some(([, kind]) => kind === 'erased')) {
      this.db.prune();
      this.db.erasedCheckpoint();
    }
    for (const [ref, kind, gen] of told) for (const listener of this.appliedListeners) listener(ref, kind, gen);
    // key records an erasure left in the topic (a create that raced it, before or after): tombstoned by
    // every view following live (not while catching up at start, when their tombstones mostly follow)
    if (sweep.size && this.confirmedAt > 0)
      void this.send(
        batch.partition,
        [...sweep].map((key) => ({ key, value: null })),
      ).catch(() => undefined);
  }

  /** The oldest fetched ends this view has reached: it is current as of when they were fetched. */
  private confirm(): void {
    const topic = this.topic!;
    while (this.confirming.length && [...this.confirming[0]!.ends].every(([partition, end]) => topic.appliedUpTo(partition) >= end)) {
      this.confirmedAt = Math.max(this.confirmedAt, this.confirming.shift()!.startedAt);
    }
  }

  private async poll(): Promise<void> {
    if (this.polling || this.down || !this.topic) return;
    this.polling = true;
    try {
      const startedAt = this.now();
      const ends = await this.topic.ends();
      this.confirming.push({ startedAt, ends });
      if (this.confirming.length > 64) this.confirming.shift();
      this.confirm();
    } catch {
      // the brokers did not answer: the view stops being confirmed, and serving stops once it is stale
    } finally {
      this.polling = false;
    }
  }
}
