import { chmodSync, chownSync, lstatSync, readFileSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { isAbsolute } from 'node:path';
import { VeilError } from '../engine/index.ts';
import { serveConnection } from './socket-connection.ts';
import { SocketSessions, type DbSocketDeps } from './socket-session.ts';

/** Where and how veil serve listens for PostgreSQL's backends (VEIL_DB_SOCKET*, docs/operations.md). */
export interface DbSocketOptions {
  path: string;
  /** the socket file's mode (default 0o660: the owner and its group) */
  mode: number;
  /** the socket file's group (a gid), e.g. the database server's OS group */
  gid?: number;
  maxConnections: number;
  authTimeoutMs: number;
  frameTimeoutMs: number;
  /** VEIL_DB_SOCKET_LEASES=on: keys may be leased to the database (docs/database.md, "Leased keys"); absent: never */
  leases?: { ttlMs: number; maxBudget: number };
}

export interface DbSocketServer {
  path: string;
  /** connections open now */
  connections(): number;
  /** stops listening, removes the socket file and closes every connection (a backend reconnects to the next veil) */
  close(): Promise<void>;
}

const MODE = /^0?[0-7]{3}$/;

/**
 * The socket's settings from the environment, or undefined when VEIL_DB_SOCKET is not set:
 * VEIL_DB_SOCKET (an absolute path), VEIL_DB_SOCKET_MODE (octal, default 660; never more than
 * the owner's and the group's read and write), VEIL_DB_SOCKET_GROUP (a group name or gid),
 * VEIL_DB_SOCKET_MAX_CONNECTIONS (default 1024), VEIL_DB_SOCKET_AUTH_TIMEOUT_MS (a connection's AUTH,
 * default 10 s) and VEIL_DB_SOCKET_FRAME_TIMEOUT_MS (a begun frame's rest, default 30 s).
 * VEIL_DB_SOCKET_LEASES=on lets the database lease keys (off unless said: key bytes then leave
 * veil), with VEIL_DB_SOCKET_LEASE_SECONDS (a lease's life, default 10, at most 300) and
 * VEIL_DB_SOCKET_LEASE_VALUES (the most values one lease covers, default 1024).
 */
export function dbSocketOptionsFromEnv(env: Readonly<Record<string, string | undefined>>): DbSocketOptions | undefined {
  const path = env.VEIL_DB_SOCKET;
  if (path === undefined || path === '') return undefined;
  if (!isAbsolute(path) || Buffer.byteLength(path) > 100) throw new VeilError('CONFIG_INVALID', 'VEIL_DB_SOCKET must be an absolute path of at most 100 bytes');
  const modeText = env.VEIL_DB_SOCKET_MODE ?? '660';
  const mode = MODE.test(modeText) ? parseInt(modeText, 8) : NaN;
  if (Number.isNaN(mode) || (mode & 0o117) !== 0)
    throw new VeilError('CONFIG_INVALID', 'VEIL_DB_SOCKET_MODE must be octal and grant nothing beyond read and write to the owner and the group (600 or 660)');
  const max = Number(env.VEIL_DB_SOCKET_MAX_CONNECTIONS ?? 1024);
  if (!Number.isInteger(max) || max < 1 || max > 65_536) throw new VeilError('CONFIG_INVALID', 'VEIL_DB_SOCKET_MAX_CONNECTIONS must be 1-65536');
  const group = env.VEIL_DB_SOCKET_GROUP;
  return {
    path,
    mode,
    maxConnections: max,
    authTimeoutMs: milliseconds(env.VEIL_DB_SOCKET_AUTH_TIMEOUT_MS, 10_000, 'VEIL_DB_SOCKET_AUTH_TIMEOUT_MS'),
    frameTimeoutMs: milliseconds(env.VEIL_DB_SOCKET_FRAME_TIMEOUT_MS, 30_000, 'VEIL_DB_SOCKET_FRAME_TIMEOUT_MS'),
    ...(group ? { gid: gidOf(group) } : {}),
    ...leasesFromEnv(env),
  };
}

function leasesFromEnv(env: Readonly<Record<string, string | undefined>>): Pick<DbSocketOptions, 'leases'> {
  const on = env.VEIL_DB_SOCKET_LEASES ?? 'off';
  if (on !== 'on' && on !== 'off') throw new VeilError('CONFIG_INVALID', 'VEIL_DB_SOCKET_LEASES must be on or off');
  if (on === 'off') return {};
  const seconds = Number(env.VEIL_DB_SOCKET_LEASE_SECONDS ?? 10);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 300) throw new VeilError('CONFIG_INVALID', 'VEIL_DB_SOCKET_LEASE_SECONDS must be 1-300');
  const values = Number(env.VEIL_DB_SOCKET_LEASE_VALUES ?? 1024);
  if (!Number.isInteger(values) || values < 1 || values > 100_000) throw new VeilError('CONFIG_INVALID', 'VEIL_DB_SOCKET_LEASE_VALUES must be 1-100000');
  return { leases: { ttlMs: seconds * 1000, maxBudget: values } };
}

function milliseconds(text: string | undefined, fallback: number, name: string): number {
  const ms = Number(text ?? fallback);
  if (!Number.isInteger(ms) || ms < 100 || ms > 600_000) throw new VeilError('CONFIG_INVALID', `${name} must be 100-600000`);
  return ms;
}

function gidOf(group: string): number {
  if (/^\d{1,10}$/.test(group)) return Number(group);
  let lines: string[] = [];
  try {
    lines = readFileSync('/etc/group', 'utf8').split('\n');
  } catch {
    /* no group database: only gids */
  }
  const entry = lines.map((l) => l.split(':')).find((f) => f[0] === group && /^\d+$/.test(f[2] ?? ''));
  if (!entry) throw new VeilError('CONFIG_INVALID', 'VEIL_DB_SOCKET_GROUP names no group of /etc/group');
  return Number(entry[2]);
}

/**
 * Listens on the Unix socket for veil's PostgreSQL client (plpython/veil_socket.py): PROTECT
 * calls on one persistent connection per database session, authenticated with the database's
 * access token (socket-session.ts). The file is created under a umask that leaves it to its owner,
 * then given its mode and group, so no one else can connect in between. A socket file left by a
 * veil that died is replaced; anything else at the path, or a socket something answers on, is not.
 */
export async function openDbSocket(options: DbSocketOptions, deps: DbSocketDeps): Promise<DbSocketServer> {
  await clearStale(options.path);
  const sessions = new SocketSessions(deps);
  const sockets = new Set<Socket>();
  let next = 0;
  const server: Server = createServer({ allowHalfOpen: false }, (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    serveConnection(
      socket,
      sessions.open(++next),
      {
        maxFrameBytes: deps.limits.bodyBytes,
        authTimeoutMs: options.authTimeoutMs,
        frameTimeoutMs: options.frameTimeoutMs,
      },
      (e) => deps.log.error({ errorType: (e as Error | undefined)?.name }, 'db socket: unexpected error'),
    );
  });
  server.maxConnections = options.maxConnections;
  const umask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.path, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    process.umask(umask);
  }
  try {
    if (options.gid !== undefined) chownSync(options.path, -1, options.gid);
    chmodSync(options.path, options.mode);
  } catch (e) {
    server.close();
    throw new VeilError('CONFIG_INVALID', `the database socket's group or mode cannot be set (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return {
    path: options.path,
    connections: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

/** Removes a socket file nothing listens on; refuses a path that is not a socket or is in use. */
async function clearStale(path: string): Promise<void> {
  let stat;
  try {
    stat = lstatSync(path);
  } catch {
    return;
  }
  if (!stat.isSocket()) throw new VeilError('CONFIG_INVALID', 'VEIL_DB_SOCKET names a file that is not a socket');
  const live = await new Promise<boolean>((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (live) throw new VeilError('CONFIG_INVALID', 'VEIL_DB_SOCKET is in use by another process');
  unlinkSync(path);
}
