import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, freePorts, ROOT } from '../helpers/processes.ts';
import { parseExposition, type Family } from '../helpers/prometheus-text.ts';

/**
 * The /metrics of each long-running process, scraped from the real process (bin/veil): parsed as
 * Prometheus text, no gauge is named with the counters' `_total` suffix, and the process and
 * Node.js metrics carry their standard unprefixed names. Stream protect and unprotect serve their
 * /metrics before they reach Kafka, so a broker nobody answers on is enough here.
 */
interface Scraped {
  name: string;
  families: Map<string, Family>;
}

const CLOSED_BROKER = '127.0.0.1:1';
/** what the scrapes started, stopped after all of them whichever failed */
const started: { child: ChildProcess; dataDir: string }[] = [];

async function scrape(name: string, args: (port: number, dataDir: string) => string[], path: string): Promise<Scraped> {
  const port = await freePorts(1);
  const dataDir = await mkdtemp(join(tmpdir(), `veil-metrics-${name}-`));
  const child: ChildProcess = spawn(join(ROOT, 'bin/veil'), args(port, dataDir), {
    env: { ...process.env, VEIL_LOG_LEVEL: 'warn', KAFKA_BROKERS: CLOSED_BROKER, OTEL_SDK_DISABLED: 'true' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  started.push({ child, dataDir });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += String(d)));
  // a process that exits (a port taken meanwhile) fails the scrape at once, with what it said
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${name} exited ${code}: ${stderr}`))));
  // the kill after the scrape rejects it too: that is no failure
  exited.catch(() => undefined);
  const text = await Promise.race([
    exited,
    eventually(
      `${name}'s ${path}`,
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5000) });
        return res.ok ? res.text() : undefined;
      },
      60_000,
    ),
  ]).catch((e: Error) => {
    throw new Error(`${e.message}; its stderr: ${stderr}`);
  });
  return { name, families: parseExposition(text) };
}

/** the arguments of `veil stream <command>` on config/example-pipeline.yaml, its brokers closed */
const streamArgs = (command: string) => (port: number, dir: string) => [
  'stream',
  command,
  '--config',
  join(ROOT, 'config/example-pipeline.yaml'),
  '--port',
  String(port),
  '--data-dir',
  dir,
  '--brokers',
  CLOSED_BROKER,
];

async function stopAll(): Promise<void> {
  await Promise.all(
    started.map(async ({ child, dataDir }) => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
      await rm(dataDir, { recursive: true, force: true });
    }),
  );
}

describe("process metrics on every process's /metrics (real processes)", () => {
  let scraped: Scraped[];
  beforeAll(async () => {
    const settled = await Promise.allSettled([
      scrape('serve', (port, dir) => ['serve', '--port', String(port), '--data-dir', dir], '/metrics'),
      scrape(
        'gateway',
        (port, dir) => ['gateway', '--config', join(ROOT, 'examples/gateway/gateway.yaml'), '--port', String(port), '--data-dir', dir],
        '/_veil/metrics',
      ),
      scrape('stream', streamArgs('protect'), '/metrics'),
      scrape('unprotect', streamArgs('unprotect'), '/metrics'),
    ]);
    // every scrape has ended (a failed one included) before the processes stop
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    scraped = settled.map((s) => (s as PromiseFulfilledResult<Scraped>).value);
  }, 120_000);
  afterAll(stopAll, 30_000);

  it('no gauge ends in _total (OpenMetrics keeps the suffix for counters); counters keep theirs', () => {
    for (const { name, families } of scraped) {
      const gauges = [...families.values()].filter((f) => f.type === 'gauge');
      expect(gauges.length, name).toBeGreaterThan(10);
      expect(
        gauges.filter((f) => f.name.endsWith('_total')).map((f) => f.name),
        name,
      ).toEqual([]);
      const counters = [...families.values()].filter((f) => f.type === 'counter');
      expect(
        counters.map((f) => f.name),
        name,
      ).toContain('process_cpu_seconds_total');
      expect(
        counters.every((f) => f.name.endsWith('_total')),
        `${name}: ${counters.map((f) => f.name).join(', ')}`,
      ).toBe(true);
    }
  });

  it('names the process and Node.js metrics as the standard dashboards do, in every process', () => {
    const standard: [string, Family['type']][] = [
      ['process_cpu_seconds_total', 'counter'],
      ['process_resident_memory_bytes', 'gauge'],
      ['process_start_time_seconds', 'gauge'],
      ['nodejs_heap_size_used_bytes', 'gauge'],
      ['nodejs_eventloop_lag_seconds', 'gauge'],
      ['nodejs_gc_duration_seconds', 'histogram'],
      ['nodejs_active_handles', 'gauge'],
      ['nodejs_version_info', 'gauge'],
    ];
    for (const { name, families } of scraped) {
      for (const [metric, type] of standard) expect(families.get(metric)?.type, `${name}: ${metric}`).toBe(type);
      const prefixed = [...families.keys()].filter((n) => /^veil_.*(process|nodejs)_/.test(n));
      expect(prefixed, name).toEqual([]);
    }
    // veil's own metrics keep their names (the unprotect process serves process metrics only)
    const own: Record<string, string> = { serve: 'veil_http_requests_total', gateway: 'veil_gateway_requests_total', stream: 'veil_stream_records_in_total' };
    for (const { name, families } of scraped) if (own[name]) expect(families.get(own[name])?.type, name).toBe('counter');
    expect(scraped.map((s) => s.name)).toEqual(['serve', 'gateway', 'stream', 'unprotect']);
  });
});
