import { join } from 'node:path';
import { wrappedKeyId } from '../keystore/index.ts';
import { SubjectDb } from './subject-db.ts';
import { applyEvent, erasureGeneration } from './subject-state.ts';
import type { SubjectBackend } from './subject-store.ts';

export const LOCAL_SUBJECTS_FILE = 'subjects.db';

export interface LocalBackendOptions {
  dataDir: string;
  /** how old a process's knowledge of other processes' erasures may be when it serves a cached key (default 1,000 ms) */
  maxStalenessMs?: number;
  /** how often other processes' erasures are looked for (default 250 ms) */
  pollMs?: number;
  now?: () => number;
}

/**
 * The local subject-key store (the embedded default): `<data dir>/subjects.db`, shared by the
 * processes on that data dir through SQLite's locking. A creation is a conditional insert (the
 * first transaction wins, the others adopt its key); an erasure rewrites the row without its
 * wrapped key and lists it in `changes`. Each process looks for other processes' erasures every
 * `pollMs` (PRAGMA data_version) and serves a cached key only when it looked less than
 * `maxStalenessMs` ago (else it looks first, synchronously); an erasure returns after
 * `maxStalenessMs`, by which time no process on the data dir serves the key.
 */
export class LocalBackend implements SubjectBackend {
  readonly description: string;
  private readonly db: SubjectDb;
  private readonly maxStalenessMs: number;
  private readonly now: () => number;
  private readonly listeners: ((ref: Buffer, kind: 'created' | 'erased', gen: number) => void)[] = [];
  private readonly timer: NodeJS.Timeout;
  private version: number;
  private seen: number;
  private lookedAt: number;

  constructor(options: LocalBackendOptions) {
    this.db = new SubjectDb(join(options.dataDir, LOCAL_SUBJECTS_FILE));
    this.description = `local subject-key store ${this.db.path}`;
    this.maxStalenessMs = options.maxStalenessMs ?? 1000;
    this.now = options.now ?? Date.now;
    this.version = this.db.dataVersion();
    this.seen = this.db.lastChange();
    this.lookedAt = this.now();
    this.timer = setInterval(() => this.look(), options.pollMs ?? 250);
    this.timer.unref();
  }

  fresh(): Promise<void> {
    return Promise.resolve();
  }

  cacheFresh(): boolean {
    if (this.now() - this.lookedAt >= this.maxStalenessMs) this.look();
    return true;
  }

  read(ref: Buffer) {
    return this.db.get(ref);
  }

  async create(ref: Buffer, gen: number, wrapped: Buffer, at: number) {
    const result = this.db.transaction(() => {
      const applied = applyEvent(this.db.get(ref), { kind: 'key', gen, wrapped, at }, wrappedKeyId);
      if (applied.change === 'created') this.db.put(ref, applied.state, false);
      return { state: applied.state, won: applied.change === 'created' };
    });
    if (result.won) this.tell(ref, 'created', gen);
    return result;
  }

  async erase(ref: Buffer, at: number) {
    const applied = this.db.transaction(() => {
      const current = this.db.get(ref);
      const result = applyEvent(current, { kind: 'erased', gen: erasureGeneration(current), at }, wrappedKeyId);
      if (result.change === 'erased') this.db.put(ref, result.state, true);
      return result;
    });
    this.db.prune();
    this.db.erasedCheckpoint();
    if (applied.change === 'erased') this.tell(ref, 'erased', applied.state.gen);
    return applied.state;
  }

  settle(): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, this.maxStalenessMs));
  }

  liveKeys() {
    return [...this.db.liveKeys()];
  }

  async rewrap(ref: Buffer, gen: number, wrapped: Buffer, at: number): Promise<void> {
    this.db.transaction(() => {
      const current = this.db.get(ref);
      const applied = applyEvent(current, { kind: 'rewrap', gen, wrapped, at }, wrappedKeyId);
      if (applied.state !== current && applied.state.wrapped === wrapped) this.db.put(ref, applied.state, false);
    });
    // the old wrapped bytes are overwritten in the file (secure_delete) and the WAL that held them truncated
    this.db.erasedCheckpoint();
  }

  watch(listener: (ref: Buffer, kind: 'created' | 'erased', gen: number) => void): void {
    this.listeners.push(listener);
  }

  health() {
    return { ready: true };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.db.close();
  }

  /** Other processes' erasures since the last look: told to the watchers (the caches drop them). */
  private look(): void {
    const startedAt = this.now();
    const version = this.db.dataVersion();
    if (version !== this.version) {
      this.version = version;
      for (const change of this.db.erasuresAfter(this.seen)) {
        this.seen = change.seq;
        this.tell(change.ref, 'erased', change.gen);
      }
    }
    this.lookedAt = startedAt;
  }

  private tell(ref: Buffer, kind: 'created' | 'erased', gen: number): void {
    for (const listener of this.listeners) listener(ref, kind, gen);
  }
}
