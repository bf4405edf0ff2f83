import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { VeilClient, VeilClientError, type VeilClientOptions } from '../../src/client/index.ts';
import { fakeClock, fakeVeil, problem, protectedOf, type FakeVeil } from './fake-veil.ts';

const SECRET = 'the-client-secret-3f9a';

function clientOn(fake: FakeVeil, options: Partial<VeilClientOptions> = {}) {
  const clock = fakeClock();
  const client = new VeilClient({
    url: 'http://veil.test',
    clientId: 'app',
    clientSecret: SECRET,
    role: 'fraud',
    fetch: (url, init) => fake.fetch(url, init),
    clock,
    retry: { random: () => 0.5 },
    ...options,
  });
  return { client, clock };
}

const emails = (n: number) => Array.from({ length: n }, (_, i) => ({ className: 'Customer', propertyName: 'email', value: `person${i}@example.com` }));

describe('VeilClient.transform', () => {
  it('sends the spec body (field names and nesting of §2.1) with the bearer token and maps answers back in order', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake);
    const values = await client.protect(emails(3));
    expect(values).toEqual(emails(3).map((e) => protectedOf(e.value)));
    const [call] = fake.transformCalls();
    expect(call!.headers.authorization).toBe('Bearer token-1');
    expect(call!.headers['content-type']).toBe('application/json');
    const body = JSON.parse(call!.body);
    expect(Object.keys(body)).toEqual(['rightsContexts', 'processingContexts', 'requests']);
    expect(body.rightsContexts).toEqual([{ guid: expect.stringMatching(/^[0-9a-f-]{36}$/), evidences: [{ name: 'Role', value: 'fraud' }] }]);
    expect(body.processingContexts).toEqual([{ guid: expect.any(String), evidences: [{ name: 'Action', value: 'Protect' }] }]);
    expect(body.requests).toEqual([
      { guid: expect.any(String), rightsContext: body.rightsContexts[0].guid, processingContext: body.processingContexts[0].guid, instances: emails(3) },
    ]);
    expect(
      await client.unprotect(
        values.map((value) => ({ className: 'Customer', propertyName: 'email', value })),
        { role: 'support' },
      ),
    ).toEqual(emails(3).map((e) => e.value));
    expect(JSON.parse(fake.transformCalls()[1]!.body).rightsContexts[0].evidences).toEqual([{ name: 'Role', value: 'support' }]);
  });

  it('makes no call for nothing', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake);
    expect(await client.protect([])).toEqual([]);
    expect(fake.calls).toHaveLength(0);
  });

  it('puts several operations in one call, one request element each, sharing contexts', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake);
    const [a, b, c] = await client.transform([
      { action: 'Protect', instances: emails(2) },
      { action: 'Protect', role: 'ingest', instances: emails(1) },
      { action: 'Protect', instances: emails(1) },
    ]);
    expect([a, b, c].map((v) => v!.length)).toEqual([2, 1, 1]);
    expect(fake.transformCalls()).toHaveLength(1);
    const body = JSON.parse(fake.transformCalls()[0]!.body);
    expect(body.requests).toHaveLength(3);
    expect(body.rightsContexts).toHaveLength(2);
    expect(body.processingContexts).toHaveLength(1);
  });

  it('splits at instancesPerCall and at requests per call, keeping order', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake, { limits: { instancesPerCall: 10, requests: 2 } });
    const values = await client.protect(emails(25));
    expect(values).toEqual(emails(25).map((e) => protectedOf(e.value)));
    expect(fake.transformCalls().map((c) => JSON.parse(c.body).requests[0].instances.length)).toEqual([10, 10, 5]);

    const fake2 = fakeVeil();
    const { client: client2 } = clientOn(fake2, { limits: { requests: 2 } });
    const results = await client2.transform([0, 1, 2, 3, 4].map((i) => ({ action: 'Protect', role: `r${i}`, instances: emails(1) })));
    expect(results.flat()).toHaveLength(5);
    expect(fake2.transformCalls().map((c) => JSON.parse(c.body).requests.length)).toEqual([2, 2, 1]);
    // each call carries only the contexts its requests use
    expect(fake2.transformCalls().map((c) => JSON.parse(c.body).rightsContexts.length)).toEqual([2, 2, 1]);
  });

  it('splits at bodyBytes: no body is larger than the limit', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake, { limits: { bodyBytes: 2048 } });
    const many = Array.from({ length: 100 }, (_, i) => ({ className: 'Customer', propertyName: 'name', value: `Ünïcødé name ${i} ${'x'.repeat(i % 40)}` }));
    const values = await client.protect(many);
    expect(values).toEqual(many.map((m) => protectedOf(m.value)));
    const sizes = fake.transformCalls().map((c) => Buffer.byteLength(c.body));
    expect(sizes.length).toBeGreaterThan(3);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(2048);
  });

  it('points an error of a split call at the logical request', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake, { limits: { instancesPerCall: 10 }, concurrency: 1 });
    let n = 0;
    const inner = fake.fetch;
    fake.fetch = async (url, init) => {
      if (url.endsWith('/transform') && ++n === 2) {
        return problem(422, 'VALUE_TOO_SHORT', {
          pointer: '/requests/0/instances/3/value',
          errors: [{ code: 'VALUE_TOO_SHORT', pointer: '/requests/0/instances/3/value', message: 'too short', className: 'Customer', propertyName: 'email' }],
        })();
      }
      return inner(url, init);
    };
    const error = await client.protect(emails(25)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VeilClientError);
    expect(error).toMatchObject({ code: 'VALUE_TOO_SHORT', status: 422, retriable: false, pointer: '/requests/0/instances/13/value' });
    expect((error as VeilClientError).details[0]).toMatchObject({ pointer: '/requests/0/instances/13/value', className: 'Customer', propertyName: 'email' });
    expect((error as Error).message).toContain('/requests/0/instances/13/value');
    expect((error as Error).message).not.toContain('person13');
  });

  it('refuses an answer that does not match the call (count or field), rather than misplace a value', async () => {
    for (const broken of [{ responses: [] }, { responses: [{ request: 'x', instances: [] }] }]) {
      const fake = fakeVeil();
      const { client } = clientOn(fake);
      fake.script('/transform', () => Response.json(broken));
      await expect(client.protect(emails(1))).rejects.toMatchObject({ code: 'RESPONSE_INVALID', retriable: false });
    }
    const fake = fakeVeil();
    const { client } = clientOn(fake);
    const inner = fake.fetch;
    fake.fetch = async (url, init) => {
      const res = await inner(url, init);
      if (!url.endsWith('/transform')) return res;
      const json = (await res.json()) as { responses: { instances: { propertyName: string }[] }[] };
      json.responses[0]!.instances[0]!.propertyName = 'name';
      return Response.json(json);
    };
    await expect(client.protect(emails(2))).rejects.toMatchObject({ code: 'RESPONSE_INVALID' });
  });
});

describe('VeilClient tokens', () => {
  it('fetches one token by client credentials and reuses it', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake);
    await client.protect(emails(1));
    await client.protect(emails(1));
    expect(fake.tokenCalls()).toHaveLength(1);
    const form = new URLSearchParams(fake.tokenCalls()[0]!.body);
    expect(Object.fromEntries(form)).toEqual({ grant_type: 'client_credentials', client_id: 'app', client_secret: SECRET });
    expect(fake.tokenCalls()[0]!.headers['content-type']).toBe('application/x-www-form-urlencoded');
  });

  it('retries once with a fresh token after a 401, and only once', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake);
    await client.protect(emails(1));
    fake.revoked.add('token-1');
    expect(await client.protect(emails(1))).toHaveLength(1);
    expect(fake.issued).toEqual(['token-1', 'token-2']);
    expect(fake.transformCalls().map((c) => c.headers.authorization)).toEqual(['Bearer token-1', 'Bearer token-1', 'Bearer token-2']);

    fake.script('/transform', problem(401, 'TOKEN_INVALID'), problem(401, 'TOKEN_INVALID'), problem(401, 'TOKEN_INVALID'));
    const error = await client.protect(emails(1)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'TOKEN_INVALID', status: 401, retriable: false });
    expect(fake.transformCalls()).toHaveLength(5);
  });

  it('refreshes before expiry (skew), when the cached token is about to expire', async () => {
    const fake = fakeVeil();
    fake.expiresIn = 300;
    const { client, clock } = clientOn(fake, { tokenRefreshSkewMs: 30_000 });
    await client.protect(emails(1));
    clock.advance(269_000);
    await client.protect(emails(1));
    expect(fake.tokenCalls()).toHaveLength(1);
    clock.advance(2_000); // 271 s: inside the 30 s skew window
    await client.protect(emails(1));
    expect(fake.tokenCalls()).toHaveLength(2);
    expect(fake.transformCalls().at(-1)!.headers.authorization).toBe('Bearer token-2');
  });

  it('single-flights concurrent refreshes: many callers, one token request', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake);
    await Promise.all(Array.from({ length: 20 }, () => client.protect(emails(1))));
    expect(fake.tokenCalls()).toHaveLength(1);
    expect(fake.transformCalls()).toHaveLength(20);
  });

  it('keeps using a still-valid token when its early refresh fails', async () => {
    const fake = fakeVeil();
    const { client, clock } = clientOn(fake, { tokenRefreshSkewMs: 30_000 });
    await client.protect(emails(1));
    clock.advance(280_000);
    fake.script(
      '/connect/token',
      problem(503, 'INTERNAL', { retriable: true }),
      problem(503, 'INTERNAL', { retriable: true }),
      problem(503, 'INTERNAL', { retriable: true }),
      problem(503, 'INTERNAL', { retriable: true }),
    );
    expect(await client.protect(emails(1))).toHaveLength(1);
    expect(fake.transformCalls().at(-1)!.headers.authorization).toBe('Bearer token-1');
  });

  it('a refused token request is TOKEN_REFUSED with the OAuth error, not retried, and never shows the secret', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake);
    fake.script('/connect/token', () => Response.json({ error: 'invalid_client', error_description: `bad secret ${SECRET}` }, { status: 401 }));
    const error = (await client.protect(emails(1)).catch((e: unknown) => e)) as VeilClientError;
    expect(error).toMatchObject({ code: 'TOKEN_REFUSED', oauthError: 'invalid_client', status: 401, retriable: false });
    expect(fake.tokenCalls()).toHaveLength(1);
    expect(JSON.stringify(error)).not.toContain(SECRET);
    expect(error.message).not.toContain(SECRET);
    expect(String(error.stack)).not.toContain(SECRET);
  });
});

describe('VeilClient retries', () => {
  it('retries 429 and 503 with backoff, honouring Retry-After as a floor', async () => {
    const fake = fakeVeil();
    const { client, clock } = clientOn(fake, { retry: { random: () => 0.5, baseDelayMs: 100, maxAttempts: 4 } });
    await client.protect(emails(1)); // token
    fake.script(
      '/transform',
      problem(429, 'RATE_LIMITED', { retriable: true }, { 'retry-after': '2' }),
      problem(503, 'AUDIT_UNAVAILABLE', { retriable: true }),
    );
    expect(await client.protect(emails(1))).toHaveLength(1);
    // first wait: max(jitter 0.5·100, Retry-After 2000); second: 0.5·200
    expect(clock.sleeps).toEqual([2000, 100]);
    expect(fake.transformCalls()).toHaveLength(4);
  });

  it('never retries a non-retriable code', async () => {
    for (const [status, code] of [
      [400, 'REQUEST_MALFORMED'],
      [403, 'ACTION_NOT_GRANTED'],
      [413, 'LIMIT_EXCEEDED'],
      [422, 'PROTECTED_VALUE_INVALID'],
    ] as const) {
      const fake = fakeVeil();
      const { client, clock } = clientOn(fake);
      fake.script('/transform', problem(status, code, { retriable: false, pointer: '/requests/0/instances/0/value' }));
      await expect(client.unprotect(emails(1))).rejects.toMatchObject({ code, status, retriable: false, pointer: '/requests/0/instances/0/value' });
      expect(fake.transformCalls()).toHaveLength(1);
      expect(clock.sleeps).toEqual([]);
    }
  });

  it('bounds the attempts, then throws the last error', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake, { retry: { maxAttempts: 3, random: () => 0 } });
    fake.script('/transform', ...Array.from({ length: 5 }, () => problem(503, 'KEY_UNAVAILABLE', { retriable: true })));
    await expect(client.protect(emails(1))).rejects.toMatchObject({ code: 'KEY_UNAVAILABLE', retriable: true, status: 503 });
    expect(fake.transformCalls()).toHaveLength(3);
  });

  it('does not wait past the deadline: a Retry-After beyond it ends the operation with that error', async () => {
    const fake = fakeVeil();
    const { client, clock } = clientOn(fake, { retry: { deadlineMs: 5_000 } });
    fake.script('/transform', problem(429, 'RATE_LIMITED', { retriable: true }, { 'retry-after': '60' }));
    const error = await client.protect(emails(1)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 60_000 });
    expect(clock.sleeps).toEqual([]);
  });

  it('treats a status without problem details by its status: 502 retried, 404 not', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake);
    fake.script('/transform', () => new Response('bad gateway', { status: 502 }));
    expect(await client.protect(emails(1))).toHaveLength(1);
    fake.script('/transform', () => new Response('<html>nope</html>', { status: 404, headers: { 'content-type': 'text/html' } }));
    await expect(client.protect(emails(1))).rejects.toMatchObject({ code: 'HTTP_ERROR', status: 404, retriable: false });
  });

  it('retries network errors against a real socket, and gives up with NETWORK_ERROR', async () => {
    const server = createServer((_req, res) => res.socket!.destroy());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    let attempts = 0;
    server.on('request', () => attempts++);
    try {
      const client = new VeilClient({ url: `http://127.0.0.1:${port}`, clientId: 'app', clientSecret: SECRET, retry: { maxAttempts: 3, baseDelayMs: 1 } });
      const error = (await client.protect(emails(1)).catch((e: unknown) => e)) as VeilClientError;
      expect(error).toMatchObject({ code: 'NETWORK_ERROR', retriable: true });
      expect(error.cause).toBeDefined();
      expect(attempts).toBe(3);
    } finally {
      server.close();
    }
  });

  it('cuts an attempt at the attempt timeout (retriable) and stops at the deadline', async () => {
    const server = createServer(() => {
      /* never answers */
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const client = new VeilClient({
        url: `http://127.0.0.1:${port}`,
        clientId: 'app',
        clientSecret: SECRET,
        attemptTimeoutMs: 100,
        retry: { maxAttempts: 2, baseDelayMs: 1 },
      });
      await expect(client.protect(emails(1))).rejects.toMatchObject({ code: 'ATTEMPT_TIMEOUT', retriable: true });
      const byDeadline = new VeilClient({
        url: `http://127.0.0.1:${port}`,
        clientId: 'app',
        clientSecret: SECRET,
        attemptTimeoutMs: 10_000,
        retry: { deadlineMs: 150 },
      });
      const started = Date.now();
      await expect(byDeadline.protect(emails(1))).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', retriable: false });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('stops when the caller aborts', async () => {
    const fake = fakeVeil();
    const { client } = clientOn(fake);
    const controller = new AbortController();
    controller.abort();
    await expect(client.protect(emails(1), { signal: controller.signal })).rejects.toMatchObject({ code: 'ABORTED' });
    expect(fake.transformCalls()).toHaveLength(0);
  });
});
