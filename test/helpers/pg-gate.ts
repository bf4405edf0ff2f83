import { randomInt } from 'node:crypto';
import pg from 'pg';
import { databaseUrl } from './postgres.ts';
import { waitFor } from './processes.ts';

/**
 * A point in a psql session's script where the session waits until the test lets it go on: the
 * test holds an advisory lock that the session's `wait` statement asks for. `reached()` resolves
 * once the session is blocked on that lock (pg_locks: a lock not granted) — so every statement
 * before it has finished — and `open()` releases it. Instead of a pg_sleep in the session and a
 * guess in the test of when the statements before it are done.
 */
export interface SessionGate {
  /** the statement to put in the session's script where it is to wait (it prints nothing) */
  wait: string;
  reached(timeoutMs?: number): Promise<void>;
  /** lets the session go on; safe to call more than once */
  open(): Promise<void>;
}

/** A gate in `database` (advisory locks are per database: the session must be in the same one). */
export async function sessionGate(database: string): Promise<SessionGate> {
  const key = randomInt(1, 2 ** 31 - 1);
  const holder = new pg.Client({ connectionString: databaseUrl(database) });
  await holder.connect();
  await holder.query('SELECT pg_advisory_lock($1::bigint)', [key]);
  let opened = false;
  // a bigint advisory key below 2^32 is pg_locks' objid, with classid 0 and objsubid 1
  const waiting = async () =>
    (
      await holder.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 0 AND objid = $1 AND objsubid = 1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        [key],
      )
    ).rows[0]!.n > 0;
  return {
    wait: `DO $$ BEGIN PERFORM pg_advisory_lock(${key}::bigint); PERFORM pg_advisory_unlock(${key}::bigint); END $$;`,
    reached: (timeoutMs = 30_000) => waitFor(waiting, timeoutMs, 'the session to reach its gate'),
    async open() {
      if (opened) return;
      opened = true;
      await holder.query('SELECT pg_advisory_unlock($1::bigint)', [key]).catch(() => undefined);
      await holder.end();
    },
  };
}
