import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { consume, createTopics, produce } from '../../helpers/kafka.ts';
import { freePorts, privateBroker, ROOT, TEST_ENV_SCRIPT, waitFor } from '../../helpers/processes.ts';
import { streamClients } from '../../helpers/stream-clients.ts';

/**
 * Issue 40: a Kafka outage must not put every stream pod in a restart loop. With the broker
 * stopped, `veil stream protect` and `veil stream unprotect` (on the shared control store, as the
 * Helm chart runs them) keep /healthz at 200 — saying in its info why they are not ready — and
 * turn /readyz to 503; when the broker is back, /readyz turns 200 and records flow again.
 */
const CONFIG = join(ROOT, 'config/example-pipeline.yaml');
const TOPICS = ['raw.customers', 'clean.customers', 'dlq.customers', 'unprotect.requests', 'unprotect.replies.support', 'unprotect.refused'];
/** the pipeline's stall time here: the liveness of before issue 40 failed this long after Kafka went */
const STALL_MS = 10_000;

interface Probe {
  status: number;
  body: { status?: string; notReady?: { reason: string }[]; [k: string]: unknown };
}
async function probe(port: number, path: string): Promise<Probe> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(3000) });
  return { status: res.status, body: (await res.json()) as Probe['body'] };
}

interface Proc {
  name: string;
  port: number;
  child: ChildProcess;
  out: () => string;
}

/** stream protect and stream unprotect of the example configuration on the broker, with the shared control store, as the chart runs them. */
async function startBoth(brokers: string, client: string, cleanups: (() => Promise<unknown>)[]): Promise<Proc[]> {
  const port = await freePorts(2);
  const env = {
    ...process.env,
    KAFKA_BROKERS: brokers,
    VEIL_CONTROL_STORE: 'kafka',
    VEIL_MASTER_KEY: 'e'.repeat(64),
    VEIL_LOG_LEVEL: 'warn',
    VEIL_STREAM_STALL_MS: String(STALL_MS),
    VEIL_KAFKA_SESSION_TIMEOUT_MS: '6000',
    VEIL_STREAM_CLIENT: client,
  };
  const procs: Proc[] = [];
  for (const [i, args] of [
    ['protect', '--pipeline', 'customers'],
    ['unprotect', '--responder', 'support-desk'],
  ].entries()) {
    const dataDir = await mkdtemp(join(tmpdir(), `veil-outage-${args[0]}-`));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const child = spawn(join(ROOT, 'bin/veil'), ['stream', ...args, '--config', CONFIG, '--data-dir', dataDir, '--port', String(port + i)], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += String(d)));
    child.stderr!.on('data', (d) => (out += String(d)));
    cleanups.push(async () => void child.kill('SIGKILL'));
    procs.push({ name: args[0]!, port: port + i, child, out: () => out });
  }
  return procs;
}

describe.each(streamClients())('a Kafka outage on %s: /readyz red, /healthz green (no restart loop)', (client) => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('stream protect and stream unprotect stay live through a stopped broker, and ready again after it', async () => {
    const broker = await privateBroker(`outage-${client}`);
    cleanups.push(() => broker.stop());
    const kafka = new Kafka({ clientId: 'outage-test', brokers: [broker.brokers], logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 200 } });
    await createTopics(kafka, TOPICS, 2);
    const procs = await startBoth(broker.brokers, client, cleanups);
    // not listening yet counts as not yet
    const all = (check: (p: Probe, name: string) => boolean, path: string) => async () => {
      for (const p of procs) if (!check(await probe(p.port, path).catch(() => ({ status: 0, body: {} })), p.name)) return false;
      return true;
    };
    const dump = (e: unknown) => {
      for (const p of procs) console.log(`${p.name}:\n${p.out().slice(-3000)}`);
      throw e;
    };
    await waitFor(
      all((p) => p.status === 200, '/readyz'),
      120_000,
      'both processes ready',
    ).catch(dump);
    await produce(kafka, 'raw.customers', [{ key: 'k1', value: JSON.stringify({ id: 1, email: 'a@example.com', cards: [], profile: { name: 'Ann' } }) }]);
    expect(await consume(kafka, 'clean.customers', 1, 60_000)).toHaveLength(1);

    // the broker stops: each probe of /healthz answers 200 while /readyz turns 503 and stays so
    await promisify(execFile)(TEST_ENV_SCRIPT, ['stop-kafka'], { env: broker.env, timeout: 120_000 });
    const stoppedAt = Date.now();
    const healthz: number[] = [];
    const notReady = new Map<string, string>();
    await waitFor(
      async () => {
        for (const p of procs) {
          const live = await probe(p.port, '/healthz');
          healthz.push(live.status);
          expect(live.status, `${p.name} /healthz ${JSON.stringify(live.body)}`).toBe(200);
          const ready = await probe(p.port, '/readyz');
          if (ready.status === 503) notReady.set(p.name, live.body.notReady?.map((r) => r.reason).join('; ') ?? '');
        }
        // observed until the outage is three stall times old, both processes not ready by then
        return Date.now() - stoppedAt > 3 * STALL_MS && notReady.size === procs.length && [...notReady.values()].every(Boolean);
      },
      90_000,
      'both processes not ready, and live for three stall times',
    ).catch(dump);
    console.log(
      `${client}: ${healthz.length} probes of /healthz during the outage, all 200; not ready because: ${JSON.stringify(Object.fromEntries(notReady))}`,
    );
    for (const reason of notReady.values()) expect(reason).toMatch(/no answer from Kafka for \d+ s|consumer down: \w+/);
    expect(await probe(procs[0]!.port, '/readyz')).toEqual({ status: 503, body: { status: 'not ready' } });

    // the broker is back: ready again, and the records produced meanwhile flow
    await broker.restart();
    await waitFor(
      all((p) => p.status === 200, '/readyz'),
      120_000,
      'both processes ready again',
    ).catch(dump);
    await produce(kafka, 'raw.customers', [{ key: 'k2', value: JSON.stringify({ id: 2, email: 'b@example.com', cards: [], profile: { name: 'Bo' } }) }]);
    expect(await consume(kafka, 'clean.customers', 2, 90_000)).toHaveLength(2);
    for (const p of procs) expect((await probe(p.port, '/healthz')).status).toBe(200);
    for (const p of procs) expect(p.child.exitCode, p.name).toBeNull();
  }, 600_000);
});
