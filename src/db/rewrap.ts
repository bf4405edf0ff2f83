import { randomUUID } from 'node:crypto';
import {
  CHECKPOINT_SQL,
  COUNTS,
  LIST_REFUSED_SQL,
  LOCK_PROGRESS_SQL,
  PROGRESS_DDL,
  PROGRESS_ERASED_SQL,
  RECORD_REFUSED_SQL,
  selectBatchSql,
  SKIP_TRIGGERS_SQL,
  START_JOB_SQL,
  updateBatchSql,
} from './rewrap-sql.ts';
import { rewrapRefused, type ColumnField, type RewrapTarget, type SqlSession } from './rewrap-table.ts';
import { rewrapValues, type RewrapSubjects, type RewrapTransform } from './rewrap-values.ts';

export type { RewrapSubjects, RewrapTransform } from './rewrap-values.ts';
export { inspectTable, type ColumnField, type RewrapTarget, type SqlSession } from './rewrap-table.ts';

/**
 * `veil db rewrap`: re-protects a table's protected columns under each key's primary version
 * after a rotation, in batches, resumable. Each batch is one transaction: its rows are read in key
 * order and locked (SELECT … FOR UPDATE), the values that changed are written back in one UPDATE,
 * and the checkpoint (last key, counts) and the batch's refusals are written to veil_rewrap in
 * the same transaction: a run killed at any point leaves whole batches, each with its checkpoint,
 * and the next run goes on after the last key committed. Nothing here holds or prints a value:
 * the chains (Engine.bindRewrap) turn protected values into protected values, and refusals are
 * recorded by row key, column and code.
 */

/** Counts of a run or of a whole rewrap (a job: from its first row to its last, across runs). */
export interface RewrapCounts {
  rowsRead: number;
  rewrapped: number;
  unchanged: number;
  refused: number;
  nulls: number;
  rowsUpdated: number;
  batches: number;
  /** values of erased data subjects, kept as stored (unreadable, as before) */
  erased: number;
}

export interface Refusal {
  key: string;
  column: string;
  code: string;
}

export interface RewrapRun {
  target: RewrapTarget;
  /** index-aligned with target.fields: Engine.bindRewrap's transforms */
  chains: readonly RewrapTransform[];
  /** with target.subjectColumn: the subjects' keys and running under them (fields scoped to the subject) */
  subjects?: RewrapSubjects;
  /** the primary (or pinned) versions of the configuration's keys: a job is for one of these */
  keyVersions: string;
  batchSize: number;
  /** start over from the first row even when a rewrap of the table is unfinished or finished */
  restart?: boolean;
  /** asked between batches: true stops the run after the batch it has committed */
  shouldStop?: () => boolean;
  /** once the job is opened: new, resumed or done before */
  onStart?: (start: RewrapResult['start']) => void;
  onBatch?: (progress: { run: RewrapCounts; lastKey: string | undefined }) => void;
  /** how many refusals the result lists (all are in veil_rewrap.refused) */
  listRefused?: number;
}

export interface RewrapResult {
  /** finished: this run did the last batch; done-before: the table's rewrap had finished already (nothing read) */
  state: 'finished' | 'done-before' | 'stopped';
  /** new: a job started at the first row (with why); resumed: after the checkpoint of an earlier run */
  start: { kind: 'new'; reason: string } | { kind: 'resumed'; lastKey: string | null; batches: number } | { kind: 'done'; finishedAt: Date };
  run: RewrapCounts;
  job: RewrapCounts;
  refusals: Refusal[];
}

const zero = (): RewrapCounts => ({ rowsRead: 0, rewrapped: 0, unchanged: 0, refused: 0, nulls: 0, rowsUpdated: 0, batches: 0, erased: 0 });

function countsOf(row: Record<string, unknown>): RewrapCounts {
  const n = (k: string) => Number(row[k] ?? 0);
  return {
    rowsRead: n('rows_read'),
    rewrapped: n('rewrapped'),
    unchanged: n('unchanged'),
    refused: n('refused'),
    nulls: n('nulls'),
    rowsUpdated: n('rows_updated'),
    batches: n('batches'),
    erased: n('erased'),
  };
}

/** `column=Class.property,…`: what a job is for, with its key column. */
export function columnsText(fields: readonly ColumnField[]): string {
  return fields.map((f) => `${f.column}=${f.className}.${f.propertyName}`).join(',');
}

async function inTransaction<T>(session: SqlSession, work: () => Promise<T>): Promise<T> {
  await session.query('BEGIN');
  try {
    const result = await work();
    await session.query('COMMIT');
    return result;
  } catch (e) {
    await session.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/**
 * Lets this transaction write past veil's trigger: session_replication_role = replica, which
 * PostgreSQL lets only superusers and roles granted SET on it change (a writer cannot, so the
 * bypass is the rewrap's alone), for this transaction only (other sessions' writes are protected).
 */
async function skipTriggers(session: SqlSession): Promise<void> {
  try {
    await session.query(SKIP_TRIGGERS_SQL);
  } catch (e) {
    if ((e as { code?: string }).code !== '42501') throw e;
    throw rewrapRefused(
      "the table has veil's trigger, and this database role may not set session_replication_role: run as a superuser, or GRANT SET ON PARAMETER session_replication_role TO the rewrap's role",
    );
  }
}

/** Creates veil_rewrap's tables if missing (needs CREATE on the database the first time). */
export async function ensureProgressTables(session: SqlSession): Promise<void> {
  const exists = (await session.query(`SELECT pg_catalog.to_regclass('veil_rewrap.refused') IS NOT NULL AS ok`)).rows[0]!.ok === true;
  if (!exists) {
    await inTransaction(session, async () => {
      for (const statement of PROGRESS_DDL) await session.query(statement);
    });
  }
  // made by an older veil, before values of erased subjects were counted
  if ((await session.query(PROGRESS_ERASED_SQL[0])).rows[0]!.ok !== true) await session.query(PROGRESS_ERASED_SQL[1]);
}

/**
 * Runs (or resumes) the table's rewrap to its end, or until shouldStop. A job is one pass over
 * the table under one set of key versions: a run resumes the table's unfinished job when the key
 * column, the columns and the key versions are the same, and starts a new one otherwise (a later
 * rotation, other columns) or with `restart`; a finished job with the same key versions is
 * reported as done, nothing read.
 */
export async function runRewrap(session: SqlSession, r: RewrapRun): Promise<RewrapResult> {
  const { target } = r;
  if (r.chains.length !== target.fields.length) throw new Error('one chain per column');
  if ((target.subjectColumn === undefined) !== (r.subjects === undefined)) throw new Error("a subject column comes with its subjects' keys");
  // a role that may not skip the trigger learns it before anything is written
  if (target.veilTrigger) await inTransaction(session, () => skipTriggers(session));
  await ensureProgressTables(session);
  const columns = columnsText(target.fields);
  const run = zero();

  const opened = await inTransaction(session, async () => {
    const row = (await session.query(LOCK_PROGRESS_SQL, [target.table])).rows[0];
    let reason: string | undefined;
    if (!row) reason = 'no earlier rewrap of this table';
    else if (r.restart) reason = '--restart';
    else if (row.key_column !== target.keyColumn || row.columns !== columns) reason = 'the earlier rewrap of this table was for other columns';
    else if (row.key_versions !== r.keyVersions)
      reason = row.finished_at ? 'keys rotated since the last rewrap finished' : 'keys rotated since the unfinished rewrap started';
    if (reason === undefined) {
      const job = String(row!.job);
      if (row!.finished_at) return { job, start: { kind: 'done' as const, finishedAt: row!.finished_at as Date } };
      return { job, start: { kind: 'resumed' as const, lastKey: (row!.last_key as string | null) ?? null, batches: Number(row!.batches) } };
    }
    const job = randomUUID();
    await session.query(START_JOB_SQL[0], [target.table, job, target.keyColumn, columns, r.keyVersions]);
    await session.query(START_JOB_SQL[1], [target.table, job]);
    return { job, start: { kind: 'new' as const, reason } };
  });

  r.onStart?.(opened.start);
  let state: RewrapResult['state'] = opened.start.kind === 'done' ? 'done-before' : 'stopped';
  while (state === 'stopped' && !r.shouldStop?.()) {
    const batch = await inTransaction(session, () => runBatch(session, r, opened.job));
    for (const k of Object.keys(run) as (keyof RewrapCounts)[]) run[k] += batch.counts[k];
    r.onBatch?.({ run: { ...run }, lastKey: batch.lastKey });
    if (batch.finished) state = 'finished';
  }
  const row = (await session.query(`SELECT ${COUNTS} FROM veil_rewrap.progress WHERE table_name = $1 AND job = $2::uuid`, [target.table, opened.job])).rows[0];
  const refusals = (await session.query(LIST_REFUSED_SQL, [opened.job, r.listRefused ?? 1000])).rows.map((x) => ({
    key: String(x.key),
    column: String(x.column_name),
    code: String(x.code),
  }));
  return { state, start: opened.start, run, job: row ? countsOf(row) : run, refusals };
}

interface BatchOutcome {
  counts: RewrapCounts;
  lastKey: string | undefined;
  finished: boolean;
}

/** One batch, inside its transaction. */
async function runBatch(session: SqlSession, r: RewrapRun, job: string): Promise<BatchOutcome> {
  const { target } = r;
  if (target.veilTrigger) await skipTriggers(session);
  const progress = (await session.query(LOCK_PROGRESS_SQL, [target.table])).rows[0];
  if (!progress || String(progress.job) !== job)
    throw rewrapRefused("another veil db rewrap started this table's rewrap over: this run stops (run again to follow it)");
  const counts = zero();
  if (progress.finished_at) return { counts, lastKey: undefined, finished: true };
  const lastKey = progress.last_key as string | null;
  const rows = (await session.query(selectBatchSql(target, lastKey !== null), lastKey !== null ? [lastKey, r.batchSize] : [r.batchSize])).rows;
  counts.rowsRead = rows.length;
  counts.batches = rows.length > 0 ? 1 : 0;

  const keys = rows.map((row) => String(row.veil_key));
  // per column: the stored values, and what is written back (the stored value where not changed)
  const stored = target.columns.map((_, ci) => rows.map((row) => row[`v${ci}`] as string | null));
  const written = stored.map((values) => [...values]);
  const changedRow = new Array<boolean>(rows.length).fill(false);
  const refused: { key: string[]; column: string[]; code: string[] } = { key: [], column: [], code: [] };
  const subjects = r.subjects ? { ids: rows.map((row) => row.veil_subject as string | null), access: r.subjects } : undefined;
  const outcomes = await rewrapValues(r.chains, stored, subjects);
  target.columns.forEach((column, ci) =>
    outcomes[ci]!.forEach((out, ri) => {
      if (out === null) counts.nulls++;
      // a value of an erased subject: unreadable for good, carried through as stored and counted
      else if (typeof out !== 'string' && out.code === 'SUBJECT_ERASED') counts.erased++;
      else if (typeof out !== 'string') {
        counts.refused++;
        refused.key.push(keys[ri]!);
        refused.column.push(column);
        refused.code.push(out.code);
      } else if (out === stored[ci]![ri]) counts.unchanged++;
      else {
        counts.rewrapped++;
        written[ci]![ri] = out;
        changedRow[ri] = true;
      }
    }),
  );

  const update = rows.map((_, ri) => ri).filter((ri) => changedRow[ri]);
  if (update.length > 0) {
    const updateKeys = update.map((ri) => keys[ri]!);
    const result = await session.query(updateBatchSql(target), [updateKeys, ...written.map((values) => update.map((ri) => values[ri])), updateKeys]);
    const same = result.rows.filter((x) => x.same === true).length;
    if (result.rows.length !== update.length || same !== update.length) {
      // rolled back by the caller: nothing of the batch is kept
      throw rewrapRefused(
        `${update.length - same} of ${update.length} rows were not stored as written (a trigger changed them, or rows went missing): the batch was rolled back`,
      );
    }
    counts.rowsUpdated = update.length;
  }
  if (refused.key.length > 0) await session.query(RECORD_REFUSED_SQL, [target.table, job, refused.key, refused.column, refused.code]);
  const finished = rows.length < r.batchSize;
  const last = keys.at(-1);
  await session.query(CHECKPOINT_SQL, [
    target.table,
    last ?? null,
    counts.rowsRead,
    counts.rewrapped,
    counts.unchanged,
    counts.refused,
    counts.nulls,
    counts.rowsUpdated,
    counts.batches,
    finished,
    counts.erased,
  ]);
  return { counts, lastKey: last, finished };
}
