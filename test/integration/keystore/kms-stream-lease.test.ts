import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CreateKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROKERS, createTopics, kafkaClient, topicsFor } from '../../helpers/kafka.ts';
import { awsKmsEnv, startMoto, type Moto } from '../../helpers/moto.ts';
import { eventually, freePorts, ROOT, sigtermAndWait } from '../../helpers/processes.ts';
import { samples } from '../../helpers/prometheus.ts';
import { pipelineYaml } from '../../helpers/stream.ts';

/** distinctive, so the test can look for it in what the processes print */
const SECRET = 'veil-lease-test-secret-5c1e0b';
const TTL_S = 4;
const PAUSE_MS = 9_000;

interface LogLine {
  time: number;
  level: number;
  msg: string;
  kek?: string;
  code?: string;
}

/** A veil process, its stdout and stderr collected. */
function veil(args: string[], env: Record<string, string>): ChildProcess & { output(): string; kekLines(): LogLine[] } {
  const child = spawn(join(ROOT, 'bin/veil'), args, { env: { ...process.env, VEIL_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (out += String(d)));
  const kekLines = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as LogLine)
      .filter((l) => l.kek !== undefined && /key-encryption key/.test(l.msg));
  return Object.assign(child, { output: () => out, kekLines });
}

/**
 * The KEK's lease in the stream processes (issue 31): with moto_server — the AWS KMS — paused
 * (SIGSTOP: connections accepted, never answered), `veil stream protect` and the `veil stream
 * unprotect` responder each log the KEK's loss (a warning within about two seconds: each renewal
 * waits at most its one-second interval, not the KMS client's 3 s timeout times its retries), the
 * keys refused once the lease's lifetime ran out (an error), and the KEK answering again after
 * SIGCONT (a warning) — each exactly once, naming the key, never a credential. /metrics shows one
 * bounded attempt per second while the KMS hung.
 */
describe('the KEK lost and back, said by stream protect and the unprotect responder (moto_server paused)', () => {
  const t = topicsFor('kms-lease');
  const responder = { requests: `requests.${t.id}`, replies: `replies.${t.id}`, refused: `refused.${t.id}` };
  const kafka = kafkaClient('kms-lease');
  let moto: Moto;
  let dataDir: string;
  let env: Record<string, string>;
  const children: ChildProcess[] = [];
  let kmsProxy: Awaited<ReturnType<typeof countingProxy>> | undefined;

  beforeAll(async () => {
    moto = await startMoto();
    const admin = new KMSClient({ region: 'eu-west-1', endpoint: moto.endpoint, credentials: { accessKeyId: 'testing', secretAccessKey: SECRET } });
    const keyId = (await admin.send(new CreateKeyCommand({}))).KeyMetadata!.KeyId!;
    admin.destroy();
    dataDir = await mkdtemp(join(tmpdir(), 'veil-kms-lease-'));
    await createTopics(kafka, [t.raw, t.clean, t.dlq, responder.requests, responder.replies, responder.refused], 1);
    env = {
      KAFKA_BROKERS: BROKERS.join(','),
      ...awsKmsEnv(moto.endpoint, keyId, TTL_S),
      AWS_SECRET_ACCESS_KEY: SECRET,
      VEIL_PROTECT_THREADS: '1',
    };
    await writeFile(
      join(dataDir, 'config.yaml'),
      pipelineYaml(
        t,
        'json',
        `responders:
  desk:
    requestTopic: ${responder.requests}
    replyTopics: [${responder.replies}]
    deadLetterTopic: ${responder.refused}
`,
      ),
    );
    await promisify(execFile)(join(ROOT, 'bin/veil'), ['config', 'provision', '--config', join(dataDir, 'config.yaml'), '--data-dir', dataDir], {
      env: { ...process.env, ...env },
    });
  }, 180_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await kmsProxy?.close();
    moto?.resume();
    await moto?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('each process logs the loss, the lapse and the recovery once; renewals are bounded by their one-second interval', async () => {
    const port = await freePorts(2);
    const common = ['--config', join(dataDir, 'config.yaml'), '--data-dir', dataDir];
    const protect = veil(['stream', 'protect', ...common, '--port', String(port)], env);
    // the responder's /metrics has no KMS calls: it reaches the KMS through a proxy that counts them
    kmsProxy = await countingProxy(moto.endpoint);
    const unprotect = veil(['stream', 'unprotect', ...common, '--port', String(port + 1)], {
      ...env,
      VEIL_KMS_ENDPOINT: kmsProxy.url,
      VEIL_BASE_URL: 'http://127.0.0.1:1',
    });
    const endpoints = { protect: moto.endpoint, unprotect: kmsProxy.url };
    children.push(protect, unprotect);
    await eventually('stream protect ready', async () => ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok ? true : undefined), 60_000);
    await eventually('the responder serving', async () => (/serving veil-unprotect-desk/.test(unprotect.output()) ? true : undefined), 60_000);
    const unwrapsBefore = await kmsCalls(port);

    moto.pause();
    const paused = Date.now();
    await new Promise((r) => setTimeout(r, PAUSE_MS));
    const unwrapsPaused = await kmsCalls(port);
    moto.resume();
    const resumed = Date.now();
    // each recovery logged, then two more renewals answered: the lease went on, with its chances to say more
    const answered = { protect: async () => (await kmsCalls(port)).ok, unprotect: async () => kmsProxy!.answered };
    for (const [name, p] of [
      ['protect', protect],
      ['unprotect', unprotect],
    ] as const) {
      await eventually('the recovery logged', async () => (p.kekLines().length >= 3 ? true : undefined), 30_000);
      const then = await answered[name]();
      await eventually(`two renewals of ${name} answered after its recovery`, async () => ((await answered[name]()) >= then + 2 ? true : undefined), 30_000);
    }

    for (const [name, p] of [
      ['protect', protect],
      ['unprotect', unprotect],
    ] as const) {
      const lines = p.kekLines();
      const said = { process: name, levels: lines.map((l) => l.level), codes: lines.map((l) => l.code ?? null), keks: [...new Set(lines.map((l) => l.kek))] };
      expect(said).toEqual({
        process: name,
        levels: [40, 50, 40],
        codes: ['KMS_UNAVAILABLE', 'KMS_UNAVAILABLE', null],
        keks: [`AWS KMS key ${env.VEIL_KMS_KEY_ID} at ${endpoints[name]}`],
      });
      const [lost, lapsed, back] = lines as [LogLine, LogLine, LogLine];
      // a renewal every ttl / 4 = 1 s, each waiting at most 1 s: the loss is seen within about 2 s (not ~13 s)
      expect({
        process: name,
        lostAfterMs: lost.time - paused < 3_500,
        lapsedAfterTtl: lapsed.time - paused >= TTL_S * 1000 - 1_500 && lapsed.time - paused < TTL_S * 1000 + 3_500,
        backAfterMs: back.time - resumed < 3_500,
      }).toEqual({ process: name, lostAfterMs: true, lapsedAfterTtl: true, backAfterMs: true });
      expect(p.output()).not.toContain(SECRET);
    }
    // one renewal attempt a second while the KMS hung, none of them longer than its interval
    const failed = unwrapsPaused.failed - unwrapsBefore.failed;
    expect(failed).toBeGreaterThanOrEqual(Math.floor(PAUSE_MS / 1000) - 3);
    expect(failed).toBeLessThanOrEqual(Math.ceil(PAUSE_MS / 1000) + 2);
    const after = await kmsCalls(port);
    expect(after.slowerThan2500ms).toBe(0);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    for (const p of [protect, unprotect]) expect((await sigtermAndWait(p, 30_000)).code).toBe(0);
  }, 240_000);
});

/** The process's unwrap calls to the KMS: answered ones, failed ones, and how many took longer than 2.5 s. */
async function kmsCalls(port: number): Promise<{ ok: number; failed: number; slowerThan2500ms: number }> {
  const all = samples(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
  const one = (name: string, labels: Record<string, string>) =>
    all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
  return {
    ok: one('veil_kms_calls_total', { op: 'unwrap', outcome: 'ok' }),
    failed: one('veil_kms_calls_total', { op: 'unwrap', outcome: 'KMS_UNAVAILABLE' }),
    slowerThan2500ms: one('veil_kms_call_seconds_count', { op: 'unwrap' }) - one('veil_kms_call_seconds_bucket', { op: 'unwrap', le: '2.5' }),
  };
}

/**
 * An HTTP proxy to `target` that counts the requests it answered with 200: a process's calls to
 * the KMS when its /metrics does not count them. A caller that gives up closes its side; the
 * request to the target is dropped then too.
 */
async function countingProxy(target: string): Promise<{ url: string; answered: number; close(): Promise<void> }> {
  const counts = { answered: 0 };
  const server = createServer((req, res) => {
    const upstream = httpRequest(`${target}${req.url ?? '/'}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      answer.once('end', () => void (answer.statusCode === 200 && counts.answered++));
    });
    upstream.once('error', () => res.destroy());
    res.once('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get answered() {
      return counts.answered;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
