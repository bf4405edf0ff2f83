import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROKERS, REGISTRY_URL } from '../../helpers/kafka.ts';
import { freePorts, ROOT } from '../../helpers/processes.ts';

function runDemo(args: string[], dataDir: string): { done: Promise<number | null>; output: () => string; kill: (s: NodeJS.Signals) => void } {
  // the tests' broker and registry, named: the demo never starts (or stops) an environment of its own here
  const env = { ...process.env, KAFKA_BROKERS: BROKERS.join(','), SCHEMA_REGISTRY_URL: REGISTRY_URL };
  const child = spawn(join(ROOT, 'scripts/node22'), [join(ROOT, 'scripts/local-demo.ts'), '--data-dir', dataDir, ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (out += String(d)));
  return { done: new Promise((resolve) => child.once('exit', (code) => resolve(code))), output: () => out, kill: (s) => child.kill(s) };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `npm run demo` against the tests' real broker and registry (KAFKA_BROKERS set by the global setup). */
describe('npm run demo (real Kafka, real veil processes)', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-demo-'));
  });
  afterAll(async () => rm(dataDir, { recursive: true, force: true }));

  it('shows raw and clean records side by side and round-trips an email over Kafka and over HTTP', async () => {
    const port = await freePorts(2);
    const demo = runDemo(['--once', '--port', String(port), '--stream-port', String(port + 1)], dataDir);
    const code = await demo.done;
    const out = demo.output();
    expect(out, out).toContain('both round trips returned the raw email');
    // it used the broker it was given, and so will not stop it
    expect(out).toContain(`demo: Kafka ${BROKERS.join(',')}`);
    expect(out).not.toContain('demo: starting Kafka');
    expect(code).toBe(0);
    expect(out).toMatch(/email {2}alice@example\.com +→ oQAAAA[E-H]/); // aes-siv output: tag 0xa1, key version 1
    expect(out).toMatch(/card {3}4111-1111-1111-1111 +→ 41\d\d-\d{4}-\d{4}-1111/); // ff1 keeps the first 2 and last 4 digits, and the dashes
    expect(out).toContain('unprotect over Kafka (unprotect.requests → unprotect.replies.support, Role support): 200 alice@example.com');
    expect(out).toMatch(/unprotect over HTTP \(POST http:\/\/127\.0\.0\.1:\d+\/transform, Role support\): 200 alice@example\.com/);
  }, 180_000);

  it('Ctrl-C stops every process it started', async () => {
    const port = await freePorts(2);
    const demo = runDemo(['--port', String(port), '--stream-port', String(port + 1)], dataDir);
    const deadline = Date.now() + 150_000;
    while (!demo.output().includes('Ctrl-C stops everything') && Date.now() < deadline) {
      if (demo.output().includes('demo: failed')) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(demo.output(), demo.output()).toContain('Ctrl-C stops everything');
    const pids = [...demo.output().matchAll(/started veil [a-z ]+ \(pid (\d+)\)/g)].map((m) => Number(m[1]));
    expect(pids).toHaveLength(3);
    expect(pids.every(alive)).toBe(true);
    demo.kill('SIGINT');
    expect(await demo.done).toBe(0);
    expect(demo.output()).toContain('demo: stopped');
    expect(pids.filter(alive)).toEqual([]);
    expect(
      await fetch(`http://127.0.0.1:${port}/readyz`).then(
        () => 'up',
        () => 'down',
      ),
    ).toBe('down');
  }, 240_000);
});
