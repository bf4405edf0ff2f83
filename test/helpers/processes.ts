import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const TEST_ENV_SCRIPT = `${ROOT}scripts/test-env.sh`;

/**
 * `count` consecutive free loopback ports below the kernel's ephemeral range (32768+), so a
 * client socket's random local port cannot take one between the check and the server's bind.
 */
export async function freePorts(count: number): Promise<number> {
  const { createServer } = await import('node:net');
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  for (let attempt = 0; attempt < 200; attempt++) {
    const first = 21000 + Math.floor(Math.random() * 11000);
    let ok = true;
    for (let i = 0; i < count && ok; i++) ok = await free(first + i);
    if (ok) return first;
  }
  throw new Error('no free ports');
}

/** A private broker for tests that stop, pause and restart it (other tests keep theirs). */
export async function privateBroker(
  label: string,
): Promise<{ brokers: string; env: Record<string, string>; pid(): Promise<number>; restart(): Promise<void>; stop(): Promise<void> }> {
  const port = await freePorts(2);
  const env = {
    ...process.env,
    VEIL_TEST_ENV_DIR: `/tmp/veil-${label}-${port}`,
    VEIL_TEST_KAFKA_PORT: String(port),
    VEIL_TEST_KAFKA_CONTROLLER_PORT: String(port + 1),
  } as Record<string, string>;
  const run = (cmd: string) => promisify(execFile)(TEST_ENV_SCRIPT, [cmd], { env, timeout: 300_000 });
  await run('start-kafka');
  const { readFile } = await import('node:fs/promises');
  return {
    brokers: `127.0.0.1:${port}`,
    env,
    pid: async () => Number((await readFile(`${env.VEIL_TEST_ENV_DIR}/kafka.pid`, 'utf8')).trim()),
    restart: async () => void (await run('restart-kafka')),
    stop: async () => {
      await run('stop-kafka').catch(() => undefined);
      const { rm } = await import('node:fs/promises');
      await rm(env.VEIL_TEST_ENV_DIR!, { recursive: true, force: true });
    },
  };
}

/** `veil stream protect` as its own process. */
export function spawnStream(args: string[], env: Record<string, string>): ChildProcess & { output: () => string } {
  const child = spawn(`${ROOT}bin/veil`, ['stream', 'protect', ...args], {
    env: { ...process.env, VEIL_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (out += String(d)));
  return Object.assign(child, { output: () => out });
}

/** Sends SIGTERM and waits up to `timeoutMs` for the exit: its code ('timeout' if none) and how long it took. */
export async function sigtermAndWait(child: ChildProcess, timeoutMs: number): Promise<{ code: number | null | 'timeout'; tookMs: number }> {
  const started = Date.now();
  const exit = child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const code = await Promise.race([exit, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), timeoutMs))]);
  return { code, tookMs: Date.now() - started };
}

export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Polls `probe` every 100 ms until it returns something other than undefined (a throw counts as not yet). */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ;) {
    const out = await probe().catch(() => undefined);
    if (out !== undefined) return out;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
