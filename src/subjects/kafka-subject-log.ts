import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, type Admin, type Consumer, type EachBatchPayload, type Producer } from 'kafkajs';
import { fetchTopicOffsetsOnceLed } from '../kafka-admin/index.ts';
import { wrappedKeyId } from '../keystore/subject-keys.ts';
import { SubjectsError } from './errors.ts';
import { SubjectDb } from './subject-db.ts';
import { parseRecord } from './subject-records.ts';
import { applyEvent } from './subject-state.ts';

export interface KafkaSubjectLogOptions {
  brokers: string[];
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
 * This process's view of the subject-key topic: every record applied to a SubjectDb (its own
 * file) with the next offset of each partition in the same transaction, so a restart resumes
 * where it stopped — reading what it missed, erasures included, before it serves — instead of
 * reading the topic again. Every `pollMs` the topic's end offsets are fetched; once the view has
 * applied up to them, `confirmedAt` becomes the fetch's start: a view current as of then.
 */
export class KafkaSubjectLog {
  readonly db: SubjectDb;
  readonly writer = randomUUID();
  partitions = 1;
  /** when this view was last known to hold every record written before (ms); 0: never */
  confirmedAt = 0;
  private readonly options: KafkaSubjectLogOptions;
  private readonly kafka: Kafka;
  private admin?: Admin;
  private consumer?: Consumer;
  producer?: Producer;
  private readonly applied = new Map<number, number>();
  private waiters: { partition: number; next: number; resolve: () => void }[] = [];
  /** fetched ends not yet reached, oldest first */
  private confirming: { startedAt: number; ends: Map<number, number> }[] = [];
  private timer?: NodeJS.Timeout;
  private polling = false;
  private readonly groupId = `veil-subjects-${randomUUID()}`;
  private readonly now: () => number;
  private readonly appliedListeners: Applied[] = [];
  down?: string;

  constructor(options: KafkaSubjectLogOptions, viewPath: string) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.kafka = new Kafka({ clientId: 'veil-subjects', brokers: options.brokers, logLevel: logLevel.NOTHING });
    this.db = new SubjectDb(viewPath, false);
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
      throw new SubjectsError('SUBJECT_STORE_UNAVAILABLE', `subject-key topic ${this.options.topic} on ${this.options.brokers.join(',')} cannot be read (${(e as Error).name})`, { cause: e });
    }
  }

  /** Resolves once the record at `offset` of `partition` (and all before it) is applied. */
  readUpTo(partition: number, offset: number): Promise<void> {
    if ((this.applied.get(partition) ?? 0) > offset) return Promise.resolve();
    const timeoutMs = this.options.appendTimeoutMs ?? 30_000;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new SubjectsError('SUBJECT_STORE_UNAVAILABLE', `subject-key topic ${this.options.topic}: offset ${offset} of partition ${partition} not read back within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.waiters.push({ partition, next: offset + 1, resolve: done });
    });
  }

  /** Sends records of one partition in one request (acks=all); the offset of the last one. */
  async send(partition: number, messages: { key: string; value: string | null }[]): Promise<number> {
    if (this.down) throw new SubjectsError('SUBJECT_STORE_UNAVAILABLE', `subject-key topic ${this.options.topic} is not being followed (${this.down}): nothing was written`);
    const [sent] = await this.producer!.send({ topic: this.options.topic, acks: -1, messages: messages.map((m) => ({ ...m, partition })) }).catch((e: unknown) => {
      throw new SubjectsError('SUBJECT_STORE_UNAVAILABLE', `subject-key topic ${this.options.topic} did not take the write (${(e as Error).name})`, { cause: e });
    });
    return Number(sent!.baseOffset) + messages.length - 1;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.consumer?.disconnect().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
    await this.admin?.deleteGroups([this.groupId]).catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
    this.db.close();
  }

  private async connect(): Promise<void> {
    const { topic } = this.options;
    this.admin = this.kafka.admin();
    await this.admin.connect();
    await this.createTopic();
    const ends = await this.ends({ justCreated: true });
    this.partitions = ends.size;
    for (const [partition, next] of this.db.offsets()) {
      if (next > (ends.get(partition) ?? 0)) throw new SubjectsError('SUBJECT_STORE_UNAVAILABLE', `the view ${this.db.path} is ahead of subject-key topic ${topic} (partition ${partition}): it was made from another topic; remove it and start again`);
      this.applied.set(partition, next);
    }
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await this.producer.connect();
    this.consumer = this.kafka.consumer({ groupId: this.groupId, readUncommitted: false, maxBytes: 50 * 1024 * 1024 });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic, fromBeginning: true });
    this.consumer.on(this.consumer.events.CRASH, (e) => {
      this.down = e.payload.restart ? undefined : `its reader stopped: ${e.payload.error.name}`;
    });
    await this.consumer.run({ autoCommit: false, eachBatchAutoResolve: true, eachBatch: (payload) => this.applyBatch(payload) });
    for (const [partition, next] of this.applied) this.consumer.seek({ topic, partition, offset: String(next) });
    const startedAt = this.now();
    await Promise.all([...ends].filter(([, end]) => end > 0).map(([partition, end]) => this.readUpTo(partition, end - 1)));
    this.confirmedAt = startedAt;
    this.timer = setInterval(() => void this.poll(), this.options.pollMs ?? 250);
    this.timer.unref();
  }

  private async createTopic(): Promise<void> {
    const { topic, partitions, replicationFactor, minInsyncReplicas, topicConfig } = this.options;
    const config = { 'cleanup.policy': 'compact', ...(minInsyncReplicas ? { 'min.insync.replicas': String(minInsyncReplicas) } : {}), ...topicConfig };
    await this.admin!.createTopics({
      waitForLeaders: true,
      topics: [{ topic, numPartitions: partitions ?? 1, ...(replicationFactor ? { replicationFactor } : {}), configEntries: Object.entries(config).map(([name, value]) => ({ name, value })) }],
    });
  }

  /**
   * The topic's end offset (the next offset to be written) by partition. Just after the topic was
   * created, a partition not yet served by its leader is waited for; a poll that fails is skipped.
   */
  private async ends({ justCreated = false } = {}): Promise<Map<number, number>> {
    const { topic } = this.options;
    const offsets = justCreated ? await fetchTopicOffsetsOnceLed(this.admin!, topic) : await this.admin!.fetchTopicOffsets(topic);
    return new Map(offsets.map((o) => [o.partition, Number(o.high)]));
  }

  /** One batch in one transaction: states, erasure list and the partition's next offset. */
  private async applyBatch({ batch }: EachBatchPayload): Promise<void> {
    const from = this.applied.get(batch.partition) ?? 0;
    const told: [Buffer, 'created' | 'erased', number][] = [];
    const sweep = new Set<string>();
    let next = from;
    this.db.transaction(() => {
      for (const message of batch.messages) {
        const offset = Number(message.offset);
        if (offset < from) continue;
        next = offset + 1;
        const record = parseRecord(message.key, message.value, Number(message.timestamp));
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
      // offsets a compaction removed count as read: the batch's last offset, not its last message's
      if (batch.messages.length > 0) next = Math.max(next, Number(batch.lastOffset()) + 1);
      if (next > from) this.db.setOffset(batch.partition, next);
    });
    if (told.some(([, kind]) => kind === 'erased')) {
      this.db.prune();
      this.db.erasedCheckpoint();
    }
    this.applied.set(batch.partition, Math.max(next, from));
    for (const [ref, kind, gen] of told) for (const listener of this.appliedListeners) listener(ref, kind, gen);
    // key records an erasure left in the topic (a create that raced it, before or after): tombstoned by
    // every view following live (not while catching up at start, when their tombstones mostly follow)
    if (sweep.size && this.confirmedAt > 0) void this.send(batch.partition, [...sweep].map((key) => ({ key, value: null }))).catch(() => undefined);
    this.release();
  }

  private release(): void {
    const ready = this.waiters.filter((w) => (this.applied.get(w.partition) ?? 0) >= w.next);
    this.waiters = this.waiters.filter((w) => (this.applied.get(w.partition) ?? 0) < w.next);
    for (const w of ready) w.resolve();
    while (this.confirming.length && [...this.confirming[0]!.ends].every(([partition, end]) => (this.applied.get(partition) ?? 0) >= end)) {
      this.confirmedAt = Math.max(this.confirmedAt, this.confirming.shift()!.startedAt);
    }
  }

  private async poll(): Promise<void> {
    if (this.polling || this.down) return;
    this.polling = true;
    try {
      const startedAt = this.now();
      const ends = await this.ends();
      this.confirming.push({ startedAt, ends });
      if (this.confirming.length > 64) this.confirming.shift();
      this.release();
    } catch {
      // the brokers did not answer: the view stops being confirmed, and serving stops once it is stale
    } finally {
      this.polling = false;
    }
  }
}
