// Issue 43: `veil serve` whose port is taken must exit non-zero promptly whatever its stores. On
// the Kafka control store it used to print `cannot start: listen EADDRINUSE` and keep running
// (45–300 s seen) while the control store's consumer held the process. Real processes, the port
// held by a test server, the tests' broker.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROKERS } from '../../helpers/kafka.ts';
import { MASTER_KEY_HEX } from '../../helpers/http-service.ts';
import { freePorts, ROOT } from '../../helpers/processes.ts';
import { personConfig } from '../../helpers/subject-config.ts';

/** The bound a supervisor may expect: start (about a second), close what was opened (at most 5 s), exit. */
const EXIT_BOUND_MS = 20_000;

let dir: string;
let configFile: string;
let taken: Server;
let port: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'veil-failed-start-'));
  configFile = join(dir, 'config.yaml');
  // subject-scoped keys: on the Kafka control store the subject store is Kafka too
  await writeFile(configFile, personConfig());
  port = await freePorts(1);
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
});

afterAll(async () => {
  await new Promise((r) => taken?.close(r));
  await rm(dir, { recursive: true, force: true });
});

/** Runs `veil serve` on the taken port: its exit code, how long it ran, and what it printed (killed at the bound). */
async function serveOnTakenPort(label: string, env: Record<string, string>): Promise<{ code: number | null; ms: number; output: string }> {
  const started = Date.now();
  const child = spawn(join(ROOT, 'bin/veil'), ['serve', '--config', configFile, '--data-dir', join(dir, label), '--port', String(port)], {
    env: { ...process.env, VEIL_MASTER_KEY: MASTER_KEY_HEX, VEIL_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += String(d)));
  child.stderr!.on('data', (d) => (output += String(d)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const bound = setTimeout(() => child.kill('SIGKILL'), EXIT_BOUND_MS * 2);
  const code = await exited;
  clearTimeout(bound);
  return { code, ms: Date.now() - started, output };
}

const kafkaEnv = () => {
  const id = randomBytes(4).toString('hex');
  return {
    VEIL_CONTROL_STORE: 'kafka',
    VEIL_CONTROL_BROKERS: BROKERS.join(','),
    VEIL_CONTROL_TOPIC: `veil.control.failed-start.${id}`,
    VEIL_SUBJECT_TOPIC: `veil.subjects.failed-start.${id}`,
  };
};

describe('veil serve on a port that is taken', () => {
  it.each([
    ['the Kafka control store (and subject store)', 'kafka', kafkaEnv],
    ['the local stores', 'local', () => ({})],
  ])(
    'with %s: prints EADDRINUSE and exits 1 within 20 s',
    async (_label, name, env) => {
      const run = await serveOnTakenPort(name, env());
      expect(run.output).toContain('cannot start: listen EADDRINUSE');
      expect(run.code).toBe(1);
      expect(run.ms).toBeLessThan(EXIT_BOUND_MS);
      // figures for the report: how long each failed start took
      console.log(`serve-failed-start: ${name} exited ${run.code} after ${run.ms} ms`);
    },
    EXIT_BOUND_MS * 3,
  );
});
