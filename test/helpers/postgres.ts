import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, ROOT } from './processes.ts';

export interface PsqlRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The cluster the tests' global setup started (test/setup/postgres-env.ts). */
export function pgServer(): { host: string; port: string } {
  const host = process.env.PGHOST;
  const port = process.env.PGPORT;
  if (!host || !port) throw new Error('PGHOST/PGPORT are not set: run through vitest (test/setup/postgres-env.ts)');
  return { host, port };
}

export function databaseUrl(database: string, user = 'postgres'): string {
  const { host, port } = pgServer();
  return `postgres://${user}@${host}:${port}/${database}`;
}

/**
 * psql as a second client: the script goes in on stdin, stops at the first error (ON_ERROR_STOP),
 * prints unaligned tuples only, and errors verbosely (SQLSTATE shown).
 */
export function psql(script: string, options: { user?: string; database?: string } = {}): Promise<PsqlRun> {
  const { host, port } = pgServer();
  const child = spawn(
    'psql',
    [
      '-X',
      '-q',
      '-A',
      '-t',
      '-v',
      'ON_ERROR_STOP=1',
      '-v',
      'VERBOSITY=verbose',
      '-h',
      host,
      '-p',
      port,
      '-U',
      options.user ?? 'postgres',
      '-d',
      options.database ?? 'postgres',
      '-f',
      '-',
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += String(d)));
  child.stderr.on('data', (d) => (stderr += String(d)));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(`${script}\n`);
  });
}

/** psql that must succeed; its output lines. */
export async function sql(script: string, options: { user?: string; database?: string } = {}): Promise<string[]> {
  const run = await psql(script, options);
  if (run.code !== 0) throw new Error(`psql failed (${run.code}): ${run.stderr}`);
  return run.stdout.split('\n').filter((l) => l !== '');
}

/** Drops a test's database (ending its sessions) and its roles; what does not drop is left as it is. */
export async function dropDatabase(db: string, roles: readonly string[]): Promise<void> {
  await sql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE);\n${roles.map((r) => `DROP ROLE IF EXISTS ${r};`).join('\n')}`).catch(() => undefined);
}

export interface VeilProcess {
  url: string;
  port: number;
  dataDir: string;
  /** the development client's secret file (veil-dev holds every role of the example config) */
  secretFile: string;
  /** VEIL_DB_SOCKET, when started with { socket: true }: reachable by the database server's OS user */
  socketPath?: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** The database server's OS group: its data directory's (the socket's directory and file get it). */
export async function pgServerGid(): Promise<number> {
  const [dir] = await sql('SHOW data_directory');
  return (await stat(dir!)).gid;
}

/**
 * `veil serve` as its own process on the example configuration; stop and start keep port and keys.
 * `socket`: also listen on VEIL_DB_SOCKET in a directory of the database server's group (0750);
 * `env`: more of veil serve's environment.
 */
/** A directory for veil's database socket, of the database server's group as in production, and the settings naming it. */
export async function dbSocketDir(): Promise<{ dir: string; path: string; env: Record<string, string> }> {
  const gid = await pgServerGid();
  const dir = await mkdtemp(join(tmpdir(), 'veil-db-sock-'));
  await chown(dir, process.getuid!(), gid);
  await chmod(dir, 0o750);
  const path = join(dir, 'db.sock');
  return { dir, path, env: { VEIL_DB_SOCKET: path, VEIL_DB_SOCKET_GROUP: String(gid) } };
}

export async function startVeil(options: { socket?: boolean; env?: Record<string, string> } = {}): Promise<VeilProcess> {
  const dataDir = await mkdtemp(join(tmpdir(), 'veil-db-serve-'));
  const port = await freePorts(1);
  const url = `http://127.0.0.1:${port}`;
  let socketEnv: Record<string, string> = {};
  let socketPath: string | undefined;
  let socketDir: string | undefined;
  if (options.socket) ({ dir: socketDir, path: socketPath, env: socketEnv } = await dbSocketDir());
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(join(ROOT, 'bin/veil'), ['serve', '--port', String(port), '--data-dir', dataDir], {
      env: { ...process.env, VEIL_LOG_LEVEL: 'warn', VEIL_DRAIN_DELAY_MS: '0', ...socketEnv, ...options.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += String(d)));
    for (let i = 0; i < 300; i++) {
      try {
        if ((await fetch(`${url}/readyz`)).ok) return;
      } catch {
        /* not yet */
      }
      if (child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`veil serve did not become ready: ${stderr}`);
  };
  const stop = async () => {
    const running = child;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((r) => running.once('exit', r));
    running.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url,
    port,
    dataDir,
    secretFile: join(dataDir, 'dev-client.secret'),
    stop,
    start,
    ...(socketPath ? { socketPath } : {}),
    async close() {
      await stop();
      await rm(dataDir, { recursive: true, force: true });
      if (socketDir) await rm(socketDir, { recursive: true, force: true });
    },
  };
}

export async function readSecret(veil: VeilProcess): Promise<string> {
  return (await readFile(veil.secretFile, 'utf8')).trim();
}

/** A TCP proxy in front of veil that counts the connections opened through it. */
export interface CountingProxy {
  url: string;
  connections: number;
  /** closes every open connection (as a server closing kept-alive connections would) */
  dropAll(): void;
  close(): Promise<void>;
}

export async function countingProxy(targetPort: number): Promise<CountingProxy> {
  const sockets = new Set<Socket>();
  const proxy: CountingProxy = {
    url: '',
    connections: 0,
    dropAll: () => sockets.forEach((s) => s.destroy()),
    close: () =>
      new Promise((r) => {
        sockets.forEach((s) => s.destroy());
        server.close(() => r());
      }),
  };
  const server: Server = createServer((client) => {
    proxy.connections++;
    const upstream = connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  proxy.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return proxy;
}
