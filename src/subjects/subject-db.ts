import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import { SubjectsError } from './errors.ts';
import type { SubjectState } from './subject-state.ts';

// better-sqlite3 is CommonJS; loaded when a store opens, so a process without subject keys never loads it
const require = createRequire(import.meta.url);

interface Row {
  gen: number;
  live: number;
  wrapped: Buffer | null;
  record: string | null;
  at: number;
  material: string | null;
  strays: string | null;
}

/**
 * The embedded store of subject keys: SQLite (better-sqlite3) in one file — the local store's
 * (`<data dir>/subjects.db`) or a process's view of the Kafka topic (`subjects-view.db`). One row
 * per subject, by its reference (a keyed hash: no subject id is stored), the wrapped key while it
 * is live. WAL, and `secure_delete`: an erasure overwrites the wrapped bytes it deletes in the
 * database file, and a checkpoint after it truncates the WAL that held them (erasedCheckpoint).
 * `changes` lists erasures in order, for other processes on the same file to drop their caches.
 */
export class SubjectDb {
  readonly path: string;
  private readonly db: BetterSqlite3.Database;
  private readonly select: BetterSqlite3.Statement<[Buffer], Row>;
  private readonly upsert: BetterSqlite3.Statement;
  private readonly addChange: BetterSqlite3.Statement;
  private readonly changesAfter: BetterSqlite3.Statement<[number], { seq: number; ref: Buffer; gen: number }>;
  private readonly version: BetterSqlite3.Statement<[], { data_version: number }>;

  /** `durable`: every commit is fsynced (the local store: a key is handed out only once it is on disk); a view re-reads what it lost from its stored offsets */
  constructor(path: string, durable = true) {
    this.path = path;
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      const Database = require('better-sqlite3') as typeof BetterSqlite3;
      this.db = new Database(path, { timeout: 5000 });
      this.db.pragma('journal_mode = WAL');
      this.db.pragma(`synchronous = ${durable ? 'FULL' : 'NORMAL'}`);
      this.db.pragma('secure_delete = ON');
      this.db.exec(SCHEMA);
    } catch (e) {
      throw unavailable(`cannot open the subject-key store ${path}`, e);
    }
    this.select = this.db.prepare('SELECT gen, live, wrapped, record, at, material, strays FROM subjects WHERE ref = ?');
    this.upsert = this.db.prepare(`INSERT INTO subjects (ref, gen, live, wrapped, record, at, material, strays) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (ref) DO UPDATE SET gen = excluded.gen, live = excluded.live, wrapped = excluded.wrapped, record = excluded.record,
      at = excluded.at, material = excluded.material, strays = excluded.strays`);
    this.addChange = this.db.prepare('INSERT INTO changes (ref, gen) VALUES (?, ?)');
    this.changesAfter = this.db.prepare('SELECT seq, ref, gen FROM changes WHERE seq > ? ORDER BY seq');
    this.version = this.db.prepare('PRAGMA data_version');
  }

  get(ref: Buffer): SubjectState | undefined {
    const row = this.select.get(ref);
    if (!row) return undefined;
    return {
      gen: row.gen,
      live: row.live === 1,
      at: row.at,
      strays: row.strays ? row.strays.split(' ') : [],
      ...(row.wrapped ? { wrapped: row.wrapped } : {}),
      ...(row.record ? { record: row.record } : {}),
      ...(row.material ? { material: row.material } : {}),
    };
  }

  /** Writes a subject's state; an erasure is also listed in `changes`. Call inside `transaction`. */
  put(ref: Buffer, state: SubjectState, erased: boolean): void {
    this.upsert.run(
      ref,
      state.gen,
      state.live ? 1 : 0,
      state.live ? (state.wrapped ?? null) : null,
      state.record ?? null,
      state.at,
      state.material ?? null,
      state.strays.length ? state.strays.join(' ') : null,
    );
    if (erased) this.addChange.run(ref, state.gen);
  }

  /** Runs `body` in one write transaction (BEGIN IMMEDIATE: other processes on the file wait). */
  transaction<T>(body: () => T): T {
    try {
      return this.db.transaction(body).immediate();
    } catch (e) {
      if (e instanceof Error && 'code' in e && String(e.code).startsWith('SQLITE_'))
        throw unavailable(`the subject-key store ${this.path} cannot be written`, e);
      throw e;
    }
  }

  /** Changes by other connections since the last call show as a new value (PRAGMA data_version). */
  dataVersion(): number {
    return this.version.get()!.data_version;
  }

  erasuresAfter(seq: number): { seq: number; ref: Buffer; gen: number }[] {
    return this.changesAfter.all(seq);
  }

  lastChange(): number {
    return (this.db.prepare('SELECT coalesce(max(seq), 0) AS seq FROM changes').get() as { seq: number }).seq;
  }

  /** After an erasure: the WAL, which may still hold the deleted wrapped bytes, is written back and truncated. */
  erasedCheckpoint(): void {
    this.db.pragma('wal_checkpoint(TRUNCATE)');
  }

  offsets(): Map<number, number> {
    const rows = this.db.prepare('SELECT partition, next FROM offsets').all() as { partition: number; next: number }[];
    return new Map(rows.map((r) => [r.partition, r.next]));
  }

  /** The next offset to read of a partition; never moved back (two processes on one view file). Call inside `transaction`. */
  setOffset(partition: number, next: number): void {
    this.db
      .prepare('INSERT INTO offsets (partition, next) VALUES (?, ?) ON CONFLICT (partition) DO UPDATE SET next = max(next, excluded.next)')
      .run(partition, next);
  }

  /** The live keys, one row at a time (a store of millions is not read into memory). */
  *liveKeys(): Iterable<{ ref: Buffer; gen: number; wrapped: Buffer }> {
    for (const row of this.db.prepare('SELECT ref, gen, wrapped FROM subjects WHERE live = 1 AND wrapped IS NOT NULL').iterate() as Iterable<{
      ref: Buffer;
      gen: number;
      wrapped: Buffer;
    }>)
      yield row;
  }

  count(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM subjects').get() as { n: number }).n;
  }

  /** Drops `changes` entries older than the newest `keep` (every follower reads them within a second). */
  prune(keep = 100_000): void {
    this.db.prepare('DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes) - ?').run(keep);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS subjects (
  ref BLOB PRIMARY KEY, gen INTEGER NOT NULL, live INTEGER NOT NULL, wrapped BLOB, record TEXT,
  at INTEGER NOT NULL, material TEXT, strays TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, ref BLOB NOT NULL, gen INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS offsets (partition INTEGER PRIMARY KEY, next INTEGER NOT NULL);
`;

function unavailable(message: string, cause: unknown): SubjectsError {
  const code = cause instanceof Error && 'code' in cause ? String(cause.code) : cause instanceof Error ? cause.name : 'error';
  return new SubjectsError('SUBJECT_STORE_UNAVAILABLE', `${message} (${code})`, { cause });
}
