import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BODY_READ_TIMEOUT_MS } from '../../src/http/body-timeout.ts';
import { startTestService, type TestService } from '../helpers/http-service.ts';
import { SECRET, expectNoneContain, expectProblem, protectEmailBody, trickle } from './support.ts';

/**
 * The body read timeout over real sockets that trickle bytes: a body not complete
 * `bodyReadTimeoutMs` after the request's headers gets 408 REQUEST_TIMEOUT (problem details)
 * and the connection closes; a body that makes it in time is answered as usual.
 */

const TIMEOUT_MS = 600;
let svc: TestService;
let token: string;

beforeAll(async () => {
  svc = await startTestService({ bodyReadTimeoutMs: TIMEOUT_MS });
  token = await svc.token();
});

afterAll(async () => svc?.close());

const json = JSON.stringify(protectEmailBody());

describe('body read timeout', () => {
  it('answers a body trickled at 1 byte per 100 ms with 408 REQUEST_TIMEOUT at the deadline, then closes the connection', async () => {
    const { reply, elapsedMs, sentBytes, closedByServer } = await trickle(svc.url, {
      path: '/transform',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: json,
      bytesPerTick: 1,
      tickMs: 100,
    });
    const p = expectProblem(reply, 'REQUEST_TIMEOUT');
    expect(p.detail).toContain(`${TIMEOUT_MS} ms`);
    expect(reply.headers.get('connection')).toBe('close');
    expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + 1500);
    expect(sentBytes).toBeLessThan(json.length);
    expect(closedByServer).toBe(true);
    // the part that did arrive holds the start of a value: it goes nowhere
    expectNoneContain([reply.text, ...svc.logs], [SECRET.email, token], 'a reply or log line');
  });

  it('also when the client sends the headers and then nothing at all', async () => {
    const { reply, closedByServer } = await trickle(svc.url, { path: '/transform', headers: { 'content-type': 'application/json' }, body: json, stopAfter: 0 });
    expectProblem(reply, 'REQUEST_TIMEOUT');
    expect(closedByServer).toBe(true);
  });

  it('also for a chunked body, and on the token endpoint', async () => {
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: svc.service.devClient!.secret }).toString();
    const chunked = `${form.length.toString(16)}\r\n${form}\r\n0\r\n\r\n`;
    const { reply, closedByServer } = await trickle(svc.url, {
      path: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'transfer-encoding': 'chunked' },
      body: chunked,
      bytesPerTick: 4,
      tickMs: 100,
    });
    expectProblem(reply, 'REQUEST_TIMEOUT');
    expect(closedByServer).toBe(true);
    expectNoneContain([reply.text, ...svc.logs], [svc.service.devClient!.secret], 'a reply or log line');
  });

  it('answers a body that arrives slowly but in time as usual, and keeps the connection', async () => {
    // 4 ticks of 100 ms: complete well before the deadline
    const { reply, closedByServer } = await trickle(
      svc.url,
      {
        path: '/transform',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: json,
        bytesPerTick: Math.ceil(json.length / 4),
        tickMs: 100,
      },
      TIMEOUT_MS + 400,
    );
    expect(reply.status, reply.text).toBe(200);
    expect(reply.json.responses).toHaveLength(1);
    // the deadline passed while the connection stayed open: it was cleared with the body
    expect(closedByServer).toBe(false);
  });

  it('closes the connection at the deadline when the answer went out before the body (404, a GET that ignores it)', async () => {
    for (const [method, path, status] of [
      ['POST', '/nope', 404],
      ['GET', '/healthz', 200],
      ['PUT', '/readyz', 405],
    ] as const) {
      const started = Date.now();
      const { reply, elapsedMs, closedByServer } = await trickle(
        svc.url,
        { method, path, headers: { 'content-type': 'application/json' }, body: json, stopAfter: 5 },
        TIMEOUT_MS + 1500,
      );
      expect(reply.status, `${method} ${path}`).toBe(status);
      expect(elapsedMs, `${method} ${path} answered at once`).toBeLessThan(TIMEOUT_MS / 2);
      expect(closedByServer, `${method} ${path}`).toBe(true);
      expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    }
  });

  it('is 30 s unless configured', async () => {
    expect(DEFAULT_BODY_READ_TIMEOUT_MS).toBe(30_000);
    const plain = await startTestService();
    try {
      // still waiting for the body well past the configured deadline of the other service
      await expect(
        trickle(plain.url, { path: '/transform', headers: { 'content-type': 'application/json' }, body: json, stopAfter: 10, giveUpMs: TIMEOUT_MS * 3 }),
      ).rejects.toThrow(/no response within/);
    } finally {
      await plain.close();
    }
  });
});
