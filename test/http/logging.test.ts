import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../helpers/memory-audit-sink.ts';
import { openService, type Service } from '../../src/app/open-service.ts';
import { EXAMPLE_CONFIG } from '../../src/env/index.ts';
import { MASTER_KEY_HEX, type TestService } from '../helpers/http-service.ts';
import { tamper } from '../helpers/engine-fixture.ts';
import { SECRET, body, call, clientsYaml, startWith, tokenRequest, transform, type Reply } from './support.ts';

/**
 * The service's log lines (pino, captured): JSON, one per line, request lines carrying the
 * request id, and never a credential or a value — neither the Authorization header, a client
 * secret, an access token, a value sent nor a value returned — on success or failure.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

const SUPPORT = { id: 'support-app', secret: 'zz-client-secret-support-7f3a9c' };

/** Drives a service through token, protect, unprotect and failing calls; returns what must not be logged. */
async function exercise(url: string, devSecret: string, clock?: TestService['clock']): Promise<{ secrets: string[]; replies: Reply[] }> {
  const secrets: string[] = [devSecret, SUPPORT.secret, 'zz-wrong-secret-0042', ...Object.values(SECRET)];
  const replies: Reply[] = [];
  const svcLike = { url } as TestService;
  const record = (r: Reply) => {
    replies.push(r);
    return r;
  };

  // tokens: form, Basic, a wrong secret, an unknown client
  const t1 = record(await tokenRequest(svcLike, { grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: devSecret }));
  const token: string = t1.json.access_token;
  const basic = `Basic ${Buffer.from(`veil-dev:${devSecret}`).toString('base64')}`;
  const t2 = record(await tokenRequest(svcLike, { grant_type: 'client_credentials' }, { authorization: basic }));
  record(await tokenRequest(svcLike, { grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: 'zz-wrong-secret-0042' }));
  record(
    await tokenRequest(
      svcLike,
      { grant_type: 'client_credentials' },
      { authorization: `Basic ${Buffer.from('veil-dev:zz-wrong-secret-0042').toString('base64')}` },
    ),
  );
  record(await tokenRequest(svcLike, { grant_type: 'client_credentials', client_id: SUPPORT.id, client_secret: SUPPORT.secret }));
  secrets.push(token, t2.json.access_token, basic, basic.slice(6));

  // protect and unprotect every reversible field
  const protect = record(await transform(svcLike, token, body({ roles: ['fraud'], action: 'Protect', instances: Object.entries(SECRET) })));
  expect(protect.status, protect.text).toBe(200);
  const protectedValues: [string, string][] = protect.json.responses[0].instances.map((i: Loose) => [i.propertyName, i.value]);
  secrets.push(...protectedValues.map(([, v]) => v));
  const unprotect = record(
    await transform(svcLike, token, body({ roles: ['fraud'], action: 'Unprotect', instances: protectedValues.filter(([p]) => p !== 'segmentKey') })),
  );
  expect(unprotect.status, unprotect.text).toBe(200);
  const masked = record(await transform(svcLike, token, body({ roles: ['support'], action: 'Mask', instances: [['cardNumber', SECRET.cardNumber]] })));
  expect(masked.status).toBe(200);

  // failing calls, each carrying values
  const email = protectedValues.find(([p]) => p === 'email')![1];
  const failing = [
    transform(svcLike, token, `{"requests": [{"value": "${SECRET.email}"`),
    transform(svcLike, token, { ...body({ roles: ['fraud'], action: 'Protect', instances: [['email', SECRET.email]] }), stray: SECRET.name }),
    transform(svcLike, token, body({ roles: ['ingest'], action: 'Unprotect', instances: [['email', email]] })),
    transform(
      svcLike,
      token,
      body({
        roles: ['fraud'],
        action: 'Unprotect',
        instances: [
          ['email', tamper(email)],
          ['name', email],
        ],
      }),
    ),
    transform(svcLike, token, body({ roles: ['fraud'], action: 'Protect', instances: [['cardNumber', SECRET.cardNumber.slice(0, 9)]] })),
    transform(svcLike, token, body({ roles: ['fraud'], action: 'Protect', instances: [['shoeSize', SECRET.nationalId]] })),
    transform(svcLike, `${token}x`, body({ roles: ['fraud'], action: 'Protect', instances: [['email', SECRET.email]] })),
    transform(svcLike, undefined, body({ roles: ['fraud'], action: 'Protect', instances: [['email', SECRET.email]] })),
    transform(svcLike, token, JSON.stringify(body({ roles: ['fraud'], action: 'Protect', instances: [['email', SECRET.email]] })), {
      'content-type': 'application/xml',
    }),
    call(`${url}/nope`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ value: SECRET.email }),
    }),
  ];
  for (const r of failing) {
    const reply = record(await r);
    expect(reply.status, reply.text).toBeGreaterThanOrEqual(400);
    expect(reply.status, reply.text).toBeLessThan(500);
  }
  if (clock) {
    clock.advance(900 + 31);
    const expired = record(await transform(svcLike, token, body({ roles: ['fraud'], action: 'Protect', instances: [['email', SECRET.email]] })));
    expect(expired.status).toBe(401);
  }
  return { secrets, replies };
}

function parseLines(chunks: readonly string[]): Loose[] {
  const lines = chunks
    .join('')
    .split('\n')
    .filter((l) => l.trim() !== '');
  return lines.map((l) => {
    let parsed: Loose;
    expect(() => (parsed = JSON.parse(l)), `not JSON: ${l.slice(0, 120)}`).not.toThrow();
    return parsed;
  });
}

function expectNoSecrets(chunks: readonly string[], secrets: readonly string[]): void {
  const text = chunks.join('');
  for (const s of secrets) {
    expect(text.includes(s), `the log holds a secret or value (${s.slice(0, 10)}…)`).toBe(false);
  }
  // no fragment of a JWT either
  expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{8,}\.eyJ/);
}

describe('log lines at the default level (info)', () => {
  let svc: TestService;
  let exercised: { secrets: string[]; replies: Reply[] };

  beforeAll(async () => {
    svc = await startWith(await clientsYaml({ [SUPPORT.id]: { secret: SUPPORT.secret, roles: ['support'] } }));
    exercised = await exercise(svc.url, svc.service.devClient!.secret, svc.clock);
  });
  afterAll(async () => svc?.close());

  it('are JSON, one object per line, with level, time and message', () => {
    const lines = parseLines(svc.logs);
    expect(lines.length).toBeGreaterThan(20);
    for (const l of lines) {
      expect(typeof l.level).toBe('number');
      expect(typeof l.time).toBe('number');
      expect(typeof l.msg).toBe('string');
    }
  });

  it('every line about a request carries its reqId, the id returned in x-request-id', () => {
    const lines = parseLines(svc.logs);
    const requestLines = lines.filter((l) => l.req || l.res || ['request refused', 'token request refused', 'request failed'].includes(l.msg));
    expect(requestLines.length).toBeGreaterThan(exercised.replies.length);
    for (const l of requestLines) expect(typeof l.reqId, JSON.stringify(l)).toBe('string');
    const logged = new Set(requestLines.map((l) => l.reqId));
    for (const r of exercised.replies) {
      expect(r.requestId).not.toBe('');
      expect(logged.has(r.requestId), `no log line for request ${r.requestId}`).toBe(true);
    }
    // refused calls log their code under the request's id
    const refused = lines.filter((l) => l.msg === 'request refused');
    expect(refused.map((l) => l.code)).toEqual(
      expect.arrayContaining([
        'REQUEST_MALFORMED',
        'ACTION_NOT_GRANTED',
        'PROTECTED_VALUE_INVALID',
        'VALUE_TOO_SHORT',
        'FIELD_UNKNOWN',
        'TOKEN_INVALID',
        'TOKEN_MISSING',
        'TOKEN_EXPIRED',
        'CONTENT_TYPE_UNSUPPORTED',
        'NOT_FOUND',
      ]),
    );
    expect(lines.filter((l) => l.msg === 'token request refused').map((l) => l.oauthError)).toEqual(['invalid_client', 'invalid_client']);
  });

  it('hold no Authorization header, client secret, access token, nor any value sent or returned', () => {
    expectNoSecrets(svc.logs, exercised.secrets);
    // the same holds for the reply bodies of failing calls
    for (const r of exercised.replies.filter((x) => x.status >= 400)) {
      for (const s of exercised.secrets) expect(r.text.includes(s), `reply ${r.status} holds a secret`).toBe(false);
    }
  });

  it('log no server error for any of those calls', () => {
    const lines = parseLines(svc.logs);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  });

  it('do not hold credentials a client wrongly puts into the query string (RFC 6750 §2.3 style)', async () => {
    const token = await svc.token();
    const before = svc.logs.length;
    const viaQuery = await call(`${svc.url}/transform?access_token=${token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body({ roles: ['fraud'], action: 'Protect', instances: [['email', SECRET.email]] })),
    });
    expect(viaQuery.status).toBe(401);
    const tokenViaQuery = await call(
      `${svc.url}/connect/token?grant_type=client_credentials&client_id=veil-dev&client_secret=${svc.service.devClient!.secret}`,
      { method: 'POST' },
    );
    expect(tokenViaQuery.status).toBe(400);
    expectNoSecrets(svc.logs.slice(before), [token, svc.service.devClient!.secret]);
  });
});

describe('log lines at the most verbose level (trace)', () => {
  let service: Service;
  let dataDir: string;
  const logs: string[] = [];
  let url: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-http-trace-'));
    const now = new Date();
    service = await openService({
      configFile: EXAMPLE_CONFIG,
      dataDir,
      env: { VEIL_MASTER_KEY: MASTER_KEY_HEX },
      now: () => now,
      baseUrl: 'http://veil.test',
      development: true,
      logLevel: 'trace',
      audit: new MemoryAuditSink(),
      logDestination: new Writable({
        write(chunk, _enc, cb) {
          logs.push(String(chunk));
          cb();
        },
      }),
    });
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(service.app.server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await service?.app.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('still hold no credential or value', async () => {
    const { secrets } = await exercise(url, service.devClient!.secret);
    expect(logs.length).toBeGreaterThan(20);
    parseLines(logs);
    expectNoSecrets(logs, secrets);
  });
});
