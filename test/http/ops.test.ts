import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/http-service.ts';
import { SECRET, body, call, startWith, tokenRequest, transform } from './support.ts';

/**
 * Operations endpoints over HTTP: liveness, readiness, Prometheus metrics (and that they hold no
 * values, tokens or secrets), the OpenAPI document, and request ids.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

let svc: TestService;
let token: string;
const secrets: string[] = [...Object.values(SECRET)];

beforeAll(async () => {
  svc = await startWith('service:\n  limits: { valueLength: 256 }');
  token = await svc.token();
  secrets.push(token, svc.service.devClient!.secret);
});

afterAll(async () => svc?.close());

/** Parses the Prometheus text format into samples: name, labels, value. */
function samples(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  const out: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    expect(m, `not a sample line: ${line}`).not.toBeNull();
    const labels: Record<string, string> = {};
    for (const [, k, v] of m![2]?.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g) ?? []) labels[k!] = v!;
    out.push({ name: m![1]!, labels, value: Number(m![3]) });
  }
  return out;
}

function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  return samples(text).find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

async function metrics(): Promise<string> {
  const reply = await call(`${svc.url}/metrics`);
  expect(reply.status).toBe(200);
  expect(reply.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return reply.text;
}

describe('health and readiness', () => {
  it('GET /healthz answers 200 ok with the running configuration version, its number and its hash (veil.config.version)', async () => {
    const reply = await call(`${svc.url}/healthz`);
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ status: 'ok', configuration: { version: 1, hash: expect.stringMatching(/^[0-9a-f]{12,64}$/) } });
  });

  it('GET /readyz answers 200 ready while serving', async () => {
    const reply = await call(`${svc.url}/readyz`);
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ status: 'ready' });
  });

  it('health and readiness need no token', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics', '/openapi.json', '/.well-known/jwks.json']) {
      expect((await call(`${svc.url}${path}`)).status, path).toBe(200);
    }
  });
});

describe('GET /metrics', () => {
  it('counts requests by route, method and status, and times them in a histogram', async () => {
    const before = await metrics();
    const ok = sample(before, 'veil_http_requests_total', { route: '/transform', method: 'POST', status: '200' }) ?? 0;
    const refused = sample(before, 'veil_http_requests_total', { route: '/transform', method: 'POST', status: '401' }) ?? 0;
    expect((await transform(svc, token, body({ roles: ['fraud'], action: 'Protect', instances: [['email', SECRET.email]] }))).status).toBe(200);
    expect((await transform(svc, token, body({ roles: ['fraud'], action: 'Protect', instances: [['email', SECRET.email]] }))).status).toBe(200);
    expect((await transform(svc, undefined, body({ roles: ['fraud'], action: 'Protect', instances: [['email', SECRET.email]] }))).status).toBe(401);
    const after = await metrics();
    expect(sample(after, 'veil_http_requests_total', { route: '/transform', method: 'POST', status: '200' })).toBe(ok + 2);
    expect(sample(after, 'veil_http_requests_total', { route: '/transform', method: 'POST', status: '401' })).toBe(refused + 1);
    expect(after).toMatch(/^# TYPE veil_http_requests_total counter$/m);
    expect(after).toMatch(/^# TYPE veil_http_request_duration_seconds histogram$/m);
    const count = sample(after, 'veil_http_request_duration_seconds_count', { route: '/transform' })!;
    expect(count).toBeGreaterThanOrEqual(3);
    expect(sample(after, 'veil_http_request_duration_seconds_bucket', { route: '/transform', le: '+Inf' })).toBe(count);
    expect(sample(after, 'veil_http_request_duration_seconds_sum', { route: '/transform' })).toBeGreaterThan(0);
    // buckets are cumulative
    const buckets = samples(after).filter((s) => s.name === 'veil_http_request_duration_seconds_bucket' && s.labels.route === '/transform');
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]!.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value);
  });

  it('counts transformed instances by class, property and action', async () => {
    const before = await metrics();
    const get = (text: string, property: string, action: string) =>
      sample(text, 'veil_instances_transformed_total', { class: 'Customer', property, action }) ?? 0;
    const res = await transform(
      svc,
      token,
      body(
        {
          roles: ['fraud'],
          action: 'Protect',
          instances: [
            ['email', SECRET.email],
            ['email', 'other@example.org'],
            ['cardNumber', SECRET.cardNumber],
          ],
        },
        { roles: ['support'], action: 'Mask', instances: [['cardNumber', SECRET.cardNumber]] },
      ),
    );
    expect(res.status, res.text).toBe(200);
    const protectedEmail = res.json.responses[0].instances[0].value;
    secrets.push(protectedEmail, res.json.responses[0].instances[2].value);
    expect((await transform(svc, token, body({ roles: ['fraud'], action: 'Unprotect', instances: [['email', protectedEmail]] }))).status).toBe(200);
    // a refused call transforms nothing
    expect((await transform(svc, token, body({ roles: ['support'], action: 'Unprotect', instances: [['cardNumber', SECRET.cardNumber]] }))).status).toBe(403);
    const after = await metrics();
    expect(get(after, 'email', 'Protect') - get(before, 'email', 'Protect')).toBe(2);
    expect(get(after, 'cardNumber', 'Protect') - get(before, 'cardNumber', 'Protect')).toBe(1);
    expect(get(after, 'cardNumber', 'Mask') - get(before, 'cardNumber', 'Mask')).toBe(1);
    expect(get(after, 'email', 'Unprotect') - get(before, 'email', 'Unprotect')).toBe(1);
    expect(get(after, 'cardNumber', 'Unprotect')).toBe(get(before, 'cardNumber', 'Unprotect'));
    expect(after).toMatch(/^# TYPE veil_instances_transformed_total counter$/m);
  });

  it('counts errors by code', async () => {
    const before = await metrics();
    const get = (text: string, code: string) => sample(text, 'veil_errors_total', { code }) ?? 0;
    await transform(svc, undefined, '{}');
    await transform(svc, token, '{');
    await transform(svc, token, body({ roles: ['support'], action: 'Unprotect', instances: [['cardNumber', SECRET.cardNumber]] }));
    await transform(svc, token, body({ roles: ['fraud'], action: 'Protect', instances: [['email', 'x'.repeat(300)]] }));
    await call(`${svc.url}/nope`);
    const after = await metrics();
    for (const code of ['TOKEN_MISSING', 'REQUEST_MALFORMED', 'ACTION_NOT_GRANTED', 'VALUE_TOO_LONG', 'NOT_FOUND']) {
      expect(get(after, code) - get(before, code), code).toBe(1);
    }
    expect(after).toMatch(/^# TYPE veil_errors_total counter$/m);
  });

  it('unmatched paths share one route label: a path cannot grow the label set or carry a value into it', async () => {
    await call(`${svc.url}/${encodeURIComponent(SECRET.email)}`);
    await call(`${svc.url}/customers/${SECRET.nationalId}?card=${SECRET.cardNumber}`);
    const text = await metrics();
    const routes = new Set(
      samples(text)
        .filter((s) => s.name === 'veil_http_requests_total')
        .map((s) => s.labels.route),
    );
    for (const r of routes)
      expect([
        '/transform',
        '/connect/token',
        '/metrics',
        'unmatched',
        '/healthz',
        '/readyz',
        '/openapi.json',
        '/.well-known/jwks.json',
        '/.well-known/openid-configuration',
      ]).toContain(r);
  });

  it('the metrics text holds no value, protected value, token or secret', async () => {
    // a failed token request and a token in a refused call, for good measure
    await tokenRequest(svc, { grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: 'zz-wrong-secret-0042' });
    await transform(svc, `${token}x`, body({ roles: ['fraud'], action: 'Protect', instances: [['email', SECRET.email]] }));
    const text = await metrics();
    for (const s of [...secrets, 'zz-wrong-secret-0042', 'zz-secret-4111', '9817-3652'])
      expect(text.includes(s), `metrics hold ${s.slice(0, 10)}…`).toBe(false);
    expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{8,}/);
    // label values are names from a closed set: routes, methods, statuses, configured fields and codes
    for (const s of samples(text)) {
      for (const [k, v] of Object.entries(s.labels)) {
        if (['route', 'method', 'status', 'class', 'property', 'action', 'code', 'le', 'quantile'].includes(k))
          expect(v.length, `${k}=${v}`).toBeLessThanOrEqual(64);
      }
    }
  });

  it('includes the process metrics under their standard unprefixed names (test/observability/process-metrics.test.ts checks every process)', async () => {
    const text = await metrics();
    expect(text).toMatch(/^process_cpu_user_seconds_total /m);
    expect(text).toMatch(/^nodejs_heap_size_total_bytes /m);
    expect(text).not.toMatch(/^veil_(process|nodejs)_/m);
  });
});

describe('GET /openapi.json', () => {
  it('is OpenAPI 3.1.0 and describes /transform and /connect/token', async () => {
    const reply = await call(`${svc.url}/openapi.json`);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    const doc: Loose = reply.json;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([{ url: 'http://veil.test' }]);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/transform', '/connect/token']));
    const transformOp = doc.paths['/transform'].post;
    expect(transformOp.security).toEqual([{ bearer: [] }]);
    expect(transformOp.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/TransformRequest');
    expect(transformOp.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/TransformResponse');
    for (const st of ['400', '401', '403', '413', '415', '422', '429', '503']) {
      expect(transformOp.responses[st].content['application/problem+json'], st).toBeDefined();
    }
    expect(doc.paths['/connect/token'].post.requestBody.content['application/x-www-form-urlencoded']).toBeDefined();
    expect(doc.components.schemas.TransformRequest.required).toEqual(expect.arrayContaining(['rightsContexts', 'processingContexts', 'requests']));
  });
});

describe('request ids', () => {
  it('echoes a well-formed x-request-id, also on errors and in the problem instance', async () => {
    const ok = await call(`${svc.url}/healthz`, { headers: { 'x-request-id': 'trace-abc_123.4' } });
    expect(ok.headers.get('x-request-id')).toBe('trace-abc_123.4');
    const refused = await transform(svc, undefined, '{}', { 'x-request-id': 'trace-refused-1' });
    expect(refused.headers.get('x-request-id')).toBe('trace-refused-1');
    expect(refused.json.instance).toBe('urn:veil:request:trace-refused-1');
    const fine = await transform(svc, token, body({ roles: ['fraud'], action: 'Protect', instances: [['email', SECRET.email]] }), {
      'x-request-id': 'trace-ok-2',
    });
    expect(fine.status).toBe(200);
    expect(fine.headers.get('x-request-id')).toBe('trace-ok-2');
  });

  it('replaces a malformed or oversized x-request-id with a fresh UUID, and generates one when absent', async () => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    for (const bad of ['has space', 'x'.repeat(65), 'semi;colon', `${SECRET.email}`]) {
      const reply = await call(`${svc.url}/healthz`, { headers: { 'x-request-id': bad } });
      expect(reply.headers.get('x-request-id'), bad).toMatch(uuid);
    }
    const a = await call(`${svc.url}/healthz`);
    const b = await call(`${svc.url}/healthz`);
    expect(a.headers.get('x-request-id')).toMatch(uuid);
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
    expect(svc.logs.join('')).not.toContain(SECRET.email);
  });
});
