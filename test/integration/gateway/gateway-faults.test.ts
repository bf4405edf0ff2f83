// Fault paths of `veil gateway`, against real processes: the upstream (test/helpers/gateway-upstream.ts)
// and two gateways (bin/veil gateway) — one with a working audit file, one whose audit file is
// /dev/full (every write fails with ENOSPC).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngine } from '../../../src/app/open-engine.ts';
import { JwtSigner } from '../../../src/keystore/jwt-signer.ts';
import { freePorts, ROOT, waitFor } from '../../helpers/processes.ts';
import { sampleSum } from '../../helpers/prometheus.ts';
import { call, type Reply } from '../../helpers/raw-http.ts';
import { spawnGatewayUpstream } from '../../helpers/gateway-upstream-process.ts';

const MASTER_KEY = 'c'.repeat(64);
const ISSUER = 'http://veil.test';
const UPSTREAM_TIMEOUT_MS = 300;
const MARKER = 'LEAK-MARKER-d41d8';

function configText(upstreamPort: number): Promise<string> {
  return readFile(join(ROOT, 'config/example.yaml'), 'utf8').then(
    (engine) => `${engine}
gateway:
  upstream: http://127.0.0.1:${upstreamPort}
  limits: { responseBytes: 4096, upstreamTimeoutMs: ${UPSTREAM_TIMEOUT_MS} }
  routes:
    - name: customers
      method: POST
      path: /customers
      request: [{ select: email, field: Customer.email }]
    - name: reveal
      method: POST
      path: /reveal
      response: [{ select: email, field: Customer.email }]
    - name: faulty
      method: GET
      path: '/faulty/*'
      response: [{ select: email, field: Customer.email }]
    - name: post-hang
      method: POST
      path: /post/hang
      request: [{ select: email, field: Customer.email }]
    - name: drop
      method: [GET, POST]
      path: /drop-reused
      request: [{ select: email, field: Customer.email }]
    - { name: plain, method: GET, path: '/plain/*' }
`,
  );
}

interface Received {
  method: string;
  target: string;
}
interface Started {
  child: ChildProcess;
  url: string;
  output: () => string;
}

async function startGateway(configFile: string, dataDir: string): Promise<Started> {
  const port = await freePorts(1);
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(join(ROOT, 'bin/veil'), ['gateway', '--config', configFile, '--data-dir', dataDir, '--port', String(port)], {
    env: { ...process.env, VEIL_MASTER_KEY: MASTER_KEY, VEIL_BASE_URL: ISSUER, VEIL_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += String(d)));
  child.stderr!.on('data', (d) => (output += String(d)));
  await waitFor(async () => (await fetch(`${url}/_veil/healthz`).catch(() => undefined))?.status === 200, 30_000, 'the gateway');
  return { child, url, output: () => output };
}

const json = (reply: Reply) => JSON.parse(reply.body.toString('utf8'));

/** the reply and how long it took */
async function timed(run: Promise<Reply>): Promise<{ reply: Reply; ms: number }> {
  const start = performance.now();
  const reply = await run;
  return { reply, ms: performance.now() - start };
}

describe('veil gateway fault paths against real processes', () => {
  let dataDir: string;
  let fullDataDir: string;
  let upstream: ChildProcess;
  let upstreamUrl: string;
  let gateway: Started;
  let auditFull: Started;
  const tokens: Record<string, string> = {};

  const received = async (): Promise<Received[]> => (await fetch(`${upstreamUrl}/__control/received`)).json() as Promise<Received[]>;
  const bearer = (who: string) => ['Authorization', `Bearer ${tokens[who]}`];
  const jsonHeaders = (who: string) => [...bearer(who), 'Content-Type', 'application/json'];

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-gateway-faults-'));
    fullDataDir = await mkdtemp(join(tmpdir(), 'veil-gateway-audit-full-'));
    ({ child: upstream, url: upstreamUrl } = await spawnGatewayUpstream());

    const configFile = join(dataDir, 'gateway.yaml');
    await writeFile(configFile, await configText(Number(new URL(upstreamUrl).port)));
    const { keystore } = await openEngine({ configFile, dataDir, env: { VEIL_MASTER_KEY: MASTER_KEY }, now: () => new Date(), provision: true });
    await keystore.create('veil-token-signing', 'jwt-es256');
    const signer = new JwtSigner(keystore, 'veil-token-signing');
    const iat = Math.floor(Date.now() / 1000);
    for (const [who, roles] of Object.entries({ ingest: ['ingest'], fraud: ['fraud'], nobody: [] as string[] })) {
      tokens[who] = await signer.sign({ iss: ISSUER, sub: who, aud: 'veil', iat, nbf: iat, exp: iat + 600, client_id: who, roles }, 'at+jwt');
    }
    // the same keys and signing key, but an audit file on a device that is always full
    await cp(dataDir, fullDataDir, { recursive: true });
    await rm(join(fullDataDir, 'audit.log'), { force: true });
    await symlink('/dev/full', join(fullDataDir, 'audit.log'));

    [gateway, auditFull] = await Promise.all([startGateway(configFile, dataDir), startGateway(configFile, fullDataDir)]);
  }, 60_000);

  afterAll(async () => {
    for (const child of [gateway?.child, auditFull?.child, upstream]) if (child && child.exitCode === null) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
    await rm(fullDataDir, { recursive: true, force: true });
  });

  it('answers 504 UPSTREAM_TIMEOUT when the upstream sends nothing within upstreamTimeoutMs, on every kind of route', async () => {
    const cases = [
      () => call(gateway.url, 'GET', '/plain/hang'),
      () => call(gateway.url, 'GET', '/faulty/hang', { headers: bearer('fraud') }),
      () => call(gateway.url, 'POST', '/post/hang', { headers: jsonHeaders('ingest'), body: '{"email":"alice@example.com"}' }),
    ];
    for (const run of cases) {
      const before = (await received()).length;
      const { reply, ms } = await timed(run());
      expect(reply.status).toBe(504);
      expect(reply.headers['content-type']).toBe('application/problem+json');
      expect(json(reply)).toMatchObject({ code: 'UPSTREAM_TIMEOUT', retriable: false });
      expect(ms).toBeGreaterThanOrEqual(UPSTREAM_TIMEOUT_MS - 20);
      expect(ms).toBeLessThan(UPSTREAM_TIMEOUT_MS + 2000);
      // the request did reach the upstream (once), protected
      const got = (await received()).slice(before);
      expect(got.map((r) => r.target)).toHaveLength(1);
    }
    expect((await call(gateway.url, 'GET', '/_veil/healthz')).status).toBe(200);
  });

  it('answers 502 UPSTREAM_RESPONSE_INVALID for a response it cannot rewrite, without a byte of it', async () => {
    for (const path of ['/faulty/bad-json', '/faulty/huge', '/faulty/huge-chunked', '/faulty/bomb']) {
      const reply = await call(gateway.url, 'GET', path, { headers: bearer('fraud') });
      expect(reply.status, path).toBe(502);
      expect(reply.headers['content-type']).toBe('application/problem+json');
      expect(json(reply)).toMatchObject({ code: 'UPSTREAM_RESPONSE_INVALID', retriable: false });
      expect(reply.body.toString('latin1')).not.toContain(MARKER);
      expect(reply.headers['content-encoding']).toBeUndefined();
    }
    expect(gateway.output()).not.toContain(MARKER);
  });

  it('sends a POST once: a pooled connection dropped after the upstream read it is not retried (504, may have acted)', async () => {
    // a pooled connection that has served a request, so the next one reuses it
    await call(gateway.url, 'GET', '/plain/warm');
    const before = (await received()).length;
    const reply = await call(gateway.url, 'POST', '/drop-reused', { headers: jsonHeaders('ingest'), body: '{"email":"alice@example.com"}' });
    expect(reply.status).toBe(504);
    expect(json(reply)).toMatchObject({ code: 'UPSTREAM_TIMEOUT', retriable: false });
    const got = (await received()).slice(before);
    expect(got.map((r) => `${r.method} ${r.target}`)).toEqual(['POST /drop-reused']);
  });

  it('sends an idempotent GET once more on a fresh connection when its pooled one was reset', async () => {
    await call(gateway.url, 'GET', '/plain/warm');
    const before = (await received()).length;
    const reply = await call(gateway.url, 'GET', '/drop-reused', { headers: bearer('ingest') });
    expect(reply.status).toBe(200);
    expect(reply.body.toString()).toBe('ok');
    // the first attempt on the reused connection, then the retry on a fresh one
    expect((await received()).slice(before).map((r) => `${r.method} ${r.target}`)).toEqual(['GET /drop-reused', 'GET /drop-reused']);
  });

  it('fails closed when the audit cannot be written: 503 AUDIT_UNAVAILABLE instead of the cleartext', async () => {
    const stored = await call(gateway.url, 'POST', '/customers', { headers: jsonHeaders('ingest'), body: '{"email":"alice@example.com","note":"kept"}' });
    expect(stored.status).toBe(200);
    const protectedText = stored.body.toString('utf8');
    expect(protectedText).not.toContain('alice@example.com');

    // the working gateway reveals (and audits) …
    const revealed = await call(gateway.url, 'POST', '/reveal', { headers: jsonHeaders('fraud'), body: protectedText });
    expect(json(revealed).email).toBe('alice@example.com');
    // … the one whose audit file is full refuses, with a retriable problem and no value
    const refused = await call(auditFull.url, 'POST', '/reveal', { headers: jsonHeaders('fraud'), body: protectedText });
    expect(refused.status).toBe(503);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(json(refused)).toMatchObject({ code: 'AUDIT_UNAVAILABLE', retriable: true });
    expect(refused.body.toString()).not.toContain('alice@example.com');
    expect(refused.body.toString()).not.toContain(JSON.parse(protectedText).email);
    // nothing to reveal for a caller without rights: nothing to audit, the protected body passes
    const nobody = await call(auditFull.url, 'POST', '/reveal', { headers: jsonHeaders('nobody'), body: protectedText });
    expect(nobody.status).toBe(200);
    expect(nobody.body.toString()).toBe(protectedText);
    expect(auditFull.output()).not.toContain('alice@example.com');
    expect(auditFull.output()).toContain('"code":"AUDIT_UNAVAILABLE"');
  });

  it('answers 502 UPSTREAM_UNAVAILABLE (retriable) at once when the upstream is down, and keeps serving', async () => {
    await call(gateway.url, 'GET', '/plain/warm');
    upstream.kill('SIGKILL');
    await once(upstream, 'exit');
    const cases = [
      () => call(gateway.url, 'GET', '/plain/x'),
      () => call(gateway.url, 'POST', '/customers', { headers: jsonHeaders('ingest'), body: '{"email":"alice@example.com"}' }),
      () => call(gateway.url, 'GET', '/faulty/bad-json', { headers: bearer('fraud') }),
    ];
    for (const run of cases) {
      const { reply, ms } = await timed(run());
      expect(reply.status).toBe(502);
      expect(json(reply)).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', retriable: true });
      expect(ms).toBeLessThan(2000);
    }
    expect((await call(gateway.url, 'GET', '/_veil/healthz')).status).toBe(200);
    expect(gateway.output()).not.toContain('alice@example.com');
  });

  it('counts the failures in its metrics by route and code', async () => {
    const metrics = async (g: Started) => (await call(g.url, 'GET', '/_veil/metrics')).body.toString('utf8');
    const text = await metrics(gateway);
    const requests = (labels: Record<string, string>) => sampleSum(text, 'veil_gateway_requests_total', labels);
    expect(requests({ route: 'plain', outcome: 'UPSTREAM_TIMEOUT', status: '504' })).toBe(1);
    expect(requests({ route: 'faulty', outcome: 'UPSTREAM_TIMEOUT', status: '504' })).toBe(1);
    expect(requests({ route: 'post-hang', outcome: 'UPSTREAM_TIMEOUT', status: '504' })).toBe(1);
    expect(requests({ route: 'faulty', outcome: 'UPSTREAM_RESPONSE_INVALID', status: '502' })).toBe(4);
    expect(requests({ route: 'drop', outcome: 'UPSTREAM_TIMEOUT', status: '504' })).toBe(1);
    expect(requests({ outcome: 'UPSTREAM_UNAVAILABLE', status: '502' })).toBe(3);
    expect(sampleSum(text, 'veil_gateway_upstream_duration_seconds_count', { route: 'plain', result: 'UPSTREAM_TIMEOUT' })).toBe(1);
    expect(sampleSum(text, 'veil_gateway_upstream_duration_seconds_count', { route: 'customers', result: 'UPSTREAM_UNAVAILABLE' })).toBe(1);
    const full = await metrics(auditFull);
    expect(sampleSum(full, 'veil_gateway_requests_total', { route: 'reveal', outcome: 'AUDIT_UNAVAILABLE', status: '503' })).toBe(1);
    expect(sampleSum(full, 'veil_gateway_fields_total', { route: 'reveal', result: 'revealed' })).toBe(0);
    expect(sampleSum(full, 'veil_gateway_fields_total', { route: 'reveal', field: 'Customer.email', result: 'kept' })).toBe(1);
    for (const t of [text, full]) expect(t).not.toContain(MARKER);
  });
});
