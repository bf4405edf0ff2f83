import { startWithScript } from './script-env.ts';

/**
 * vitest global setup: tests that need PostgreSQL read PGHOST/PGPORT/PGUSER/VEIL_PG_URL. When
 * VEIL_PG_URL is not given, this starts a throwaway cluster with scripts/pg-env.sh (Debian's
 * PostgreSQL 15 with PL/Python, as an unprivileged user, loopback only) and stops it after the run.
 */
export default async function setup(): Promise<() => Promise<void>> {
  if (process.env.VEIL_PG_URL) return async () => {};
  return startWithScript('scripts/pg-env.sh', [Number(process.env.VEIL_PG_PORT ?? 15432)]);
}
