import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { promisify } from 'node:util';

/**
 * vitest global setup: tests that need PostgreSQL read PGHOST/PGPORT/PGUSER/VEIL_PG_URL. When
 * VEIL_PG_URL is not given, this starts a throwaway cluster with scripts/pg-env.sh (Debian's
 * PostgreSQL 15 with PL/Python, as an unprivileged user, loopback only) and stops it after the
 * run — unless someone else had already started it, which is then left running.
 */
export default async function setup(): Promise<() => Promise<void>> {
  if (process.env.VEIL_PG_URL) return async () => {};
  const script = new URL('../../scripts/pg-env.sh', import.meta.url).pathname;
  const alreadyUp = await portOpen(Number(process.env.VEIL_PG_PORT ?? 15432));
  const { stdout } = await promisify(execFile)(script, ['start'], { maxBuffer: 1 << 20, timeout: 600_000 });
  for (const line of stdout.split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) process.env[m[1]!] = m[2]!;
  }
  return async () => {
    if (alreadyUp || process.env.VEIL_KEEP_TEST_ENV) return;
    await promisify(execFile)(script, ['stop']).catch(() => undefined);
  };
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
