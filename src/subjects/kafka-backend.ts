import { join } from 'node:path';
import { SubjectsError } from './errors.ts';
import { KafkaSubjectLog, type KafkaSubjectLogOptions } from './kafka-subject-log.ts';
import { refHex } from './subject-id.ts';
import { erasureRecordKey, erasureRecordValue, keyRecordKey, keyRecordValue, partitionOf, rewrapRecordKey, rewrapRecordValue } from './subject-records.ts';
import { erasureGeneration, type SubjectState } from './subject-state.ts';
import type { SubjectBackend } from './subject-store.ts';
import { wrappedKeyId } from '../keystore/index.ts';

export interface KafkaBackendOptions extends KafkaSubjectLogOptions {
  dataDir: string;
  /**
   * how old this view may be when it serves a key (default 1,500 ms): it serves only while it has
   * read the topic up to an end fetched less than this ago, and an erasure returns after this long
   */
  maxStalenessMs?: number;
  /** how long a read waits for the view to be current before SUBJECT_STORE_UNAVAILABLE (default 10 s) */
  freshTimeoutMs?: number;
}

/**
 * The subject-key store on a compacted Kafka topic, followed by every process (kafka-subject-log.ts
 * keeps each one's view in its own SQLite file). A creation writes a key record and reads the topic
 * back to it: the first key of a generation in the partition's order won, in every view alike, and
 * the loser adopts it and tombstones its own record. An erasure writes, in one request, the
 * subject's erasure record and tombstones of every key record it had (compaction then removes
 * them), reads them back, and waits `maxStalenessMs`: every process that still serves has then read
 * the topic past it (it serves only while current), so none serves the key any more.
 */
export class KafkaBackend implements SubjectBackend {
  readonly description: string;
  private readonly log: KafkaSubjectLog;
  private readonly maxStalenessMs: number;
  private readonly freshTimeoutMs: number;
  private readonly now: () => number;

  private constructor(options: KafkaBackendOptions) {
    this.log = new KafkaSubjectLog(options, join(options.dataDir, `subjects-view-${options.topic.replace(/[^A-Za-z0-9._-]/g, '_')}.db`));
    this.description = `Kafka topic ${options.topic} on ${options.connection.brokers.join(',')}`;
    this.maxStalenessMs = options.maxStalenessMs ?? 1500;
    this.freshTimeoutMs = options.freshTimeoutMs ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  static async open(options: KafkaBackendOptions): Promise<KafkaBackend> {
    const backend = new KafkaBackend(options);
    await backend.log.start();
    return backend;
  }

  /** The view's file (for tests and the bench). */
  get viewPath(): string {
    return this.log.db.path;
  }

  cacheFresh(): boolean {
    return this.now() - this.log.confirmedAt < this.maxStalenessMs;
  }

  async fresh(): Promise<void> {
    if (this.cacheFresh()) return;
    const deadline = this.now() + this.freshTimeoutMs;
    while (!this.cacheFresh()) {
      if (this.log.down || this.now() >= deadline) {
        throw new SubjectsError(
          'SUBJECT_STORE_UNAVAILABLE',
          `this process's view of ${this.description} is not current (${this.log.down ?? `not confirmed for ${this.now() - this.log.confirmedAt} ms`}): subject keys are not served`,
        );
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  read(ref: Buffer): SubjectState | undefined {
    return this.log.db.get(ref);
  }

  async create(ref: Buffer, gen: number, wrapped: Buffer, at: number): Promise<{ state: SubjectState; won: boolean }> {
    const hex = refHex(ref);
    const record = keyRecordKey(hex, gen, this.log.writer);
    const partition = partitionOf(hex, this.log.partitions);
    const offset = await this.log.send(partition, [{ key: record, value: keyRecordValue(gen, wrapped, at) }]);
    await this.log.readUpTo(partition, offset);
    const state = this.read(ref)!;
    const won = state.live && state.record === record;
    if (!won) void this.log.send(partition, [{ key: record, value: null }]).catch(() => undefined);
    return { state, won };
  }

  async erase(ref: Buffer, at: number): Promise<SubjectState> {
    const hex = refHex(ref);
    const current = this.read(ref);
    const partition = partitionOf(hex, this.log.partitions);
    const material = current?.live && current.wrapped ? wrappedKeyId(current.wrapped) : undefined;
    const records = [
      { key: erasureRecordKey(hex), value: erasureRecordValue(erasureGeneration(current), at, material) },
      ...(current?.live && current.record ? [{ key: current.record, value: null }] : []),
      // the key's rewrap, if it was ever rewrapped (a tombstone of a record that never was costs nothing)
      ...(current?.live ? [{ key: rewrapRecordKey(hex, current.gen), value: null }] : []),
      ...(current?.strays ?? []).map((key) => ({ key, value: null })),
    ];
    const offset = await this.log.send(partition, records);
    await this.log.readUpTo(partition, offset);
    return this.read(ref)!;
  }

  settle(): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, this.maxStalenessMs));
  }

  liveKeys() {
    return [...this.log.db.liveKeys()];
  }

  async rewrap(ref: Buffer, gen: number, wrapped: Buffer, at: number): Promise<void> {
    const hex = refHex(ref);
    const partition = partitionOf(hex, this.log.partitions);
    const offset = await this.log.send(partition, [{ key: rewrapRecordKey(hex, gen), value: rewrapRecordValue(gen, wrapped, at) }]);
    await this.log.readUpTo(partition, offset);
  }

  watch(listener: (ref: Buffer, kind: 'created' | 'erased', gen: number) => void): void {
    this.log.onApplied(listener);
  }

  health(): { ready: boolean; reason?: string } {
    if (this.log.down) return { ready: false, reason: this.log.down };
    return this.cacheFresh() ? { ready: true } : { ready: false, reason: `view not confirmed current for ${this.now() - this.log.confirmedAt} ms` };
  }

  async close(): Promise<void> {
    await this.log.close();
  }
}
