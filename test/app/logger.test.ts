import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { duplicateKeys } from '../helpers/json-keys.ts';
import { eventually, freePorts, ROOT } from '../helpers/processes.ts';
import { startOtlpReceiver } from '../observability/otlp-receiver.ts';

describe('duplicateKeys: read from the raw text, which JSON.parse would hide', () => {
  it('finds a key twice in one object, at any depth, decoded; not the same key in two objects', () => {
    expect(duplicateKeys('{"service":"veil","msg":"x","service":"veil-serve"}')).toEqual(['service']);
    expect(duplicateKeys('{"a":{"b":1,"\\u0062":2},"c":[{"d":1,"d":2}]}')).toEqual(['b', 'd']);
    expect(duplicateKeys('{"a":{"a":1},"b":["a","a"],"s":"\\"a\\":1,\\"a\\""}')).toEqual([]);
  });
});

/**
 * The log lines of a real `veil serve` (stdout, JSON, one per line) with tracing on, whose start
 * line names the service it exports as: each key once per object, in the raw text.
 */
describe("veil serve's log lines (real process)", () => {
  it('carry each key once: "service" is the logger\'s, the tracing line names its OTLP service apart', async () => {
    const receiver = await startOtlpReceiver();
    const dataDir = await mkdtemp(join(tmpdir(), 'veil-logger-'));
    const port = await freePorts(1);
    const child = spawn(join(ROOT, 'bin/veil'), ['serve', '--port', String(port), '--data-dir', dataDir], {
      env: {
        ...process.env,
        VEIL_LOG_LEVEL: 'info',
        VEIL_DRAIN_DELAY_MS: '0',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_SERVICE_NAME: 'veil-logged',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await eventually('serve ready', async () => ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok ? true : undefined), 60_000);
      // a refused token request: a warning line besides the request lines
      await fetch(`http://127.0.0.1:${port}/connect/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: 'zz-wrong' }),
      });
      child.kill('SIGTERM');
      await exited;
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await receiver.close();
      await rm(dataDir, { recursive: true, force: true });
    }
    const lines = stdout.split('\n').filter((l) => l.startsWith('{'));
    const parsed = lines.map((l) => JSON.parse(l) as { service?: string; serviceName?: string; msg?: string });
    for (const line of lines) expect(duplicateKeys(line), line).toEqual([]);
    // the line that used to carry "service" twice, and the others
    expect(parsed.find((l) => l.msg === 'traces: exporting spans over OTLP/HTTP')).toMatchObject({ service: 'veil', serviceName: 'veil-logged' });
    expect(parsed.some((l) => l.msg === 'incoming request')).toBe(true);
    expect(parsed.some((l) => l.msg === 'draining')).toBe(true);
    expect(parsed.every((l) => l.service === 'veil')).toBe(true);
  }, 90_000);
});
