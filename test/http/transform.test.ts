import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transformResponseSchema } from '../../src/engine/index.ts';
import { ERROR_CATALOG, type ErrorCode } from '../../src/errors/catalog.ts';
import type { TestService } from '../helpers/http-service.ts';
import { startTestService } from '../helpers/http-service.ts';
import {
  EXAMPLE_CONFIG_TEXT,
  REVERSIBLE,
  SECRET,
  body,
  call,
  clientsYaml,
  expectNoneContain,
  expectProblem,
  expectProblemAt,
  protectEmailBody,
  startWith,
  transform,
  trickle,
  type Reply,
} from './support.ts';
import { expectCardChanged, requestSpec, tamper, transformRequest, withKeyVersion } from '../helpers/engine-fixture.ts';
import { GATEWAY_ONLY_CODES } from '../helpers/error-codes.ts';

/**
 * POST /transform over real HTTP (spec §2, §4.1, §5): the request/response shape, and every
 * error code of the catalog that an HTTP caller can provoke, as RFC 9457 problem details.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

/** Codes a test here has observed over HTTP with a conforming problem body. */
const covered = new Set<ErrorCode>();
/** Every reply body and every value sent, checked against the logs at the end. */
const replies: string[] = [];
const services: TestService[] = [];

function problem(reply: Reply, code: ErrorCode): Loose {
  replies.push(reply.text);
  const p = expectProblem(reply, code);
  covered.add(code);
  return p;
}

function problemAt(reply: Reply, code: ErrorCode, pointer: string): Loose {
  replies.push(reply.text);
  const p = expectProblemAt(reply, code, pointer);
  covered.add(code);
  return p;
}

function ok(reply: Reply): Loose {
  replies.push(reply.text);
  expect(reply.status, reply.text).toBe(200);
  expect(reply.headers.get('content-type')).toMatch(/^application\/json\b/);
  return reply.json;
}

/** The client that holds only the support role (configured with an scrypt hash). */
const SUPPORT_CLIENT = { id: 'support-app', secret: 'zz-client-secret-support-7f3a9c' };

let svc: TestService;
let token: string;

beforeAll(async () => {
  svc = await startWith(await clientsYaml({ [SUPPORT_CLIENT.id]: { secret: SUPPORT_CLIENT.secret, roles: ['support'] } }));
  services.push(svc);
  token = await svc.token();
});

afterAll(async () => {
  await Promise.all(services.map((s) => s.close()));
});

async function protect(property: string, value: string, role = 'fraud'): Promise<string> {
  const res = ok(await transform(svc, token, transformRequest(role, 'Protect', [property, value])));
  return res.responses[0].instances[0].value;
}

describe('POST /transform: request and response shape (spec §2, §4.1)', () => {
  it.each(REVERSIBLE)('protects then unprotects Customer.%s: a round trip over HTTP', async (property) => {
    const clear = SECRET[property];
    const protectBody = transformRequest('fraud', 'Protect', [property, clear]);
    const protectedRes = ok(await transform(svc, token, protectBody));
    expect(transformResponseSchema.safeParse(protectedRes).success).toBe(true);
    expect(protectedRes.responses).toHaveLength(1);
    expect(protectedRes.responses[0].request).toBe(protectBody.requests[0]!.guid);
    const out = protectedRes.responses[0].instances[0];
    expect(Object.keys(out).sort()).toEqual(['className', 'propertyName', 'value']);
    expect(out.className).toBe('Customer');
    expect(out.propertyName).toBe(property);
    // the card is protected by FF1 on 6 digits, which may leave it as it is (expectCardChanged)
    if (property === 'cardNumber') await expectCardChanged(clear, out.value, (v) => protect(property, v));
    else expect(out.value).not.toBe(clear);

    const unprotectBody = transformRequest('fraud', 'Unprotect', [property, out.value]);
    const revealed = ok(await transform(svc, token, unprotectBody));
    expect(revealed).toEqual({
      responses: [{ request: unprotectBody.requests[0]!.guid, instances: [{ className: 'Customer', propertyName: property, value: clear }] }],
    });
  });

  it('keeps the format of FPE fields and the determinism of the configured techniques', async () => {
    const card = await protect('cardNumber', SECRET.cardNumber);
    expect(card).toMatch(/^4111-98\d\d-\d{4}-0046$/);
    const nationalId = await protect('nationalId', SECRET.nationalId);
    expect(nationalId).toMatch(/^[0-9A-Z]{13}$/);
    // aes-siv is deterministic, aes-gcm randomized
    expect(await protect('email', SECRET.email)).toBe(await protect('email', SECRET.email));
    expect(await protect('name', SECRET.name)).not.toBe(await protect('name', SECRET.name));
    expect(await protect('segmentKey', SECRET.segmentKey)).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('answers one response per request, in request order, linked by request, instances in order', async () => {
    const req = body(
      requestSpec('fraud', 'Protect', ['email', SECRET.email], ['cardNumber', SECRET.cardNumber], ['nationalId', SECRET.nationalId]),
      requestSpec('ingest', 'Pseudonymize', ['name', SECRET.name]),
      requestSpec('support', 'Mask', ['cardNumber', SECRET.cardNumber]),
      requestSpec('ingest', 'Protect', ['segmentKey', SECRET.segmentKey], ['name', SECRET.name]),
    );
    const res = ok(await transform(svc, token, req));
    expect(Object.keys(res)).toEqual(['responses']);
    expect(res.responses.map((r: Loose) => r.request)).toEqual(req.requests.map((r) => r.guid));
    for (const [i, r] of (res.responses as Loose[]).entries()) {
      expect(Object.keys(r).sort()).toEqual(['instances', 'request']);
      expect(r.instances.map((x: Loose) => [x.className, x.propertyName])).toEqual(req.requests[i]!.instances.map((x) => [x.className, x.propertyName]));
      for (const [j, x] of r.instances.entries()) {
        const sent = req.requests[i]!.instances[j]!.value;
        // the card of request 0 is protected by FF1 on 6 digits, which may leave it as it is (expectCardChanged)
        if (i === 0 && x.propertyName === 'cardNumber') await expectCardChanged(sent, x.value, (v) => protect('cardNumber', v));
        else expect(x.value).not.toBe(sent);
      }
    }
    expect(res.responses[2].instances[0].value).toBe('****-****-****-0046');
  });

  it('lets several requests share contexts, and compares guids case-insensitively while echoing them as sent', async () => {
    const rc = randomUUID();
    const pc = randomUUID();
    const g1 = randomUUID().toUpperCase();
    const g2 = randomUUID();
    const req = {
      rightsContexts: [{ guid: rc, evidences: [{ name: 'Role', value: 'fraud' }] }],
      processingContexts: [{ guid: pc, evidences: [{ name: 'Action', value: 'Protect' }] }],
      requests: [
        {
          guid: g1,
          rightsContext: rc.toUpperCase(),
          processingContext: pc,
          instances: [{ className: 'Customer', propertyName: 'email', value: SECRET.email }],
        },
        { guid: g2, rightsContext: rc, processingContext: pc.toUpperCase(), instances: [] },
      ],
    };
    const res = ok(await transform(svc, token, req));
    expect(res.responses).toEqual([
      { request: g1, instances: [{ className: 'Customer', propertyName: 'email', value: expect.any(String) }] },
      { request: g2, instances: [] },
    ]);
  });

  it('answers an empty call with no responses', async () => {
    expect(ok(await transform(svc, token, { rightsContexts: [], processingContexts: [], requests: [] }))).toEqual({ responses: [] });
  });

  it('accepts application/json with a charset parameter', async () => {
    const res = ok(await transform(svc, token, protectEmailBody(), { 'content-type': 'application/json; charset=utf-8' }));
    expect(res.responses).toHaveLength(1);
  });

  it('lets a client unprotect what its role is granted: support reveals an email protected by ingest', async () => {
    const protectedEmail = await protect('email', SECRET.email, 'ingest');
    const supportToken = await svc.token(SUPPORT_CLIENT.id, SUPPORT_CLIENT.secret);
    const res = ok(await transform(svc, supportToken, transformRequest('support', 'Unprotect', ['email', protectedEmail])));
    expect(res.responses[0].instances[0].value).toBe(SECRET.email);
  });
});

describe('POST /transform: shape and identifier errors (400)', () => {
  it('REQUEST_MALFORMED: a body that is not JSON', async () => {
    const p = problemAt(await transform(svc, token, `{"rightsContexts": [{"guid": "${SECRET.email}"`), 'REQUEST_MALFORMED', '');
    expect(p.errors).toHaveLength(1);
  });

  it('REQUEST_MALFORMED: an empty body declared as JSON', async () => {
    problemAt(await transform(svc, token, ''), 'REQUEST_MALFORMED', '');
  });

  it('REQUEST_MALFORMED: JSON that is not an object (null, array, string, number)', async () => {
    for (const text of ['null', '[]', `"${SECRET.email}"`, '4111']) {
      problemAt(await transform(svc, token, text), 'REQUEST_MALFORMED', '');
    }
  });

  it('REQUEST_MALFORMED: a missing array and a wrongly typed one, each with its pointer', async () => {
    problemAt(await transform(svc, token, { rightsContexts: [], processingContexts: [] }), 'REQUEST_MALFORMED', '/requests');
    problemAt(await transform(svc, token, { rightsContexts: {}, processingContexts: [], requests: [] }), 'REQUEST_MALFORMED', '/rightsContexts');
  });

  it('REQUEST_MALFORMED: a non-string value, pointing at the value without echoing it', async () => {
    const req: Loose = protectEmailBody();
    req.requests[0].instances[0].value = 41119817365;
    const p = problemAt(await transform(svc, token, req), 'REQUEST_MALFORMED', '/requests/0/instances/0/value');
    expect(JSON.stringify(p)).not.toContain('41119817365');
  });

  it('REQUEST_MALFORMED: unknown fields are refused; a field name that looks like a value is not echoed', async () => {
    const req: Loose = protectEmailBody();
    req.requests[0].instances[0][SECRET.email] = 'x';
    req.extra = 1;
    const reply = await transform(svc, token, req);
    const p = problem(reply, 'REQUEST_MALFORMED');
    expect(p.errors.map((e: Loose) => e.pointer).sort()).toEqual(['', '/requests/0/instances/0']);
    expect(reply.text).not.toContain(SECRET.email);
    expect(p.errors.some((e: Loose) => e.message.includes('"extra"'))).toBe(true);
  });

  it('REQUEST_MALFORMED: prototype poisoning is refused with 400, not 500', async () => {
    problem(
      await transform(svc, token, '{"__proto__": {"polluted": true}, "rightsContexts": [], "processingContexts": [], "requests": []}'),
      'REQUEST_MALFORMED',
    );
    problem(
      await transform(svc, token, '{"constructor": {"prototype": {"polluted": true}}, "rightsContexts": [], "processingContexts": [], "requests": []}'),
      'REQUEST_MALFORMED',
    );
    expect(({} as Loose).polluted).toBeUndefined();
  });

  it('GUID_INVALID: a guid that is not a UUID', async () => {
    const req = protectEmailBody();
    req.requests[0]!.guid = 'not-a-uuid';
    const p = problemAt(await transform(svc, token, req), 'GUID_INVALID', '/requests/0/guid');
    expect(p.errors).toHaveLength(1);
  });

  it('GUID_DUPLICATE: a guid used twice in the call (case-insensitively, across the arrays)', async () => {
    const req = protectEmailBody();
    req.requests[0]!.guid = req.rightsContexts[0]!.guid.toUpperCase();
    problemAt(await transform(svc, token, req), 'GUID_DUPLICATE', '/requests/0/guid');
  });

  it('REFERENCE_UNRESOLVED: a request names a context that is not in the call, and the request guid is given', async () => {
    const req = protectEmailBody();
    req.requests[0]!.processingContext = randomUUID();
    const p = problemAt(await transform(svc, token, req), 'REFERENCE_UNRESOLVED', '/requests/0/processingContext');
    expect(p.errors[0].request).toBe(req.requests[0]!.guid);
  });

  it('EVIDENCE_UNKNOWN: an evidence name that no configured context uses', async () => {
    const req = body({
      roles: ['fraud'],
      processing: [
        { name: 'Action', value: 'Protect' },
        { name: 'Colour', value: 'blue' },
      ],
      instances: [['email', SECRET.email]],
    });
    problemAt(await transform(svc, token, req), 'EVIDENCE_UNKNOWN', '/processingContexts/0/evidences/1/name');
  });

  it('PROCESSING_CONTEXT_UNMATCHED: an Action no configured processing context has, and no evidences at all', async () => {
    problemAt(
      await transform(svc, token, transformRequest('fraud', 'Frobnicate', ['email', SECRET.email])),
      'PROCESSING_CONTEXT_UNMATCHED',
      '/processingContexts/0/evidences',
    );
    problemAt(
      await transform(svc, token, body({ roles: ['fraud'], processing: [], instances: [['email', SECRET.email]] })),
      'PROCESSING_CONTEXT_UNMATCHED',
      '/processingContexts/0/evidences',
    );
  });

  it('PROCESSING_CONTEXT_AMBIGUOUS: evidences matching two configured contexts equally well', async () => {
    const text = EXAMPLE_CONFIG_TEXT.replace(
      /^processingContexts:\n/m,
      'processingContexts:\n  protect-web: { evidences: { Action: Protect, Channel: web } }\n  protect-gold: { evidences: { Action: Protect, Tier: gold } }\n',
    );
    expect(text).toContain('protect-gold');
    const ambiguous = await startTestService({ configText: text });
    services.push(ambiguous);
    const t = await ambiguous.token();
    const evidences = [
      { name: 'Action', value: 'Protect' },
      { name: 'Channel', value: 'web' },
      { name: 'Tier', value: 'gold' },
    ];
    const p = problemAt(
      await transform(ambiguous, t, body({ roles: ['fraud'], processing: evidences, instances: [['email', SECRET.email]] })),
      'PROCESSING_CONTEXT_AMBIGUOUS',
      '/processingContexts/0/evidences',
    );
    expect(p.detail).toContain('protect-web');
    expect(p.detail).toContain('protect-gold');
    // one more specific evidence set picks one context
    ok(await transform(ambiguous, t, body({ roles: ['fraud'], processing: evidences.slice(0, 2), instances: [['email', SECRET.email]] })));
  });
});

describe('POST /transform: authorization errors (403)', () => {
  it('ROLE_NOT_HELD: a Role evidence counts only if the token carries the role', async () => {
    const supportToken = await svc.token(SUPPORT_CLIENT.id, SUPPORT_CLIENT.secret);
    // the role it holds works
    ok(await transform(svc, supportToken, transformRequest('support', 'Protect', ['email', SECRET.email])));
    // claiming one it does not hold is refused, whatever the body says
    const reply = await transform(svc, supportToken, transformRequest('fraud', 'Protect', ['email', SECRET.email]));
    const p = problemAt(reply, 'ROLE_NOT_HELD', '/rightsContexts/0/evidences/0/value');
    expect(reply.text).not.toContain(SECRET.email);
    expect(p.errors).toHaveLength(1);
    // also when the held role is claimed beside it
    problem(await transform(svc, supportToken, transformRequest(['support', 'fraud'], 'Protect', ['email', SECRET.email])), 'ROLE_NOT_HELD');
  });

  it('RIGHTS_CONTEXT_UNMATCHED: a rights context whose evidences match no configured one', async () => {
    problemAt(
      await transform(svc, token, body({ rights: [], action: 'Protect', instances: [['email', SECRET.email]] })),
      'RIGHTS_CONTEXT_UNMATCHED',
      '/rightsContexts/0/evidences',
    );
  });

  it('ACTION_NOT_GRANTED: 403 naming the request guid, class.property and action, never the value', async () => {
    const req = transformRequest('support', 'Unprotect', ['email', 'fine'], ['cardNumber', SECRET.cardNumber], ['nationalId', SECRET.nationalId]);
    const reply = await transform(svc, token, req);
    const p = problemAt(reply, 'ACTION_NOT_GRANTED', '/requests/0/instances/1');
    expect(p.errors).toHaveLength(2);
    expect(p.errors[0]).toMatchObject({
      code: 'ACTION_NOT_GRANTED',
      request: req.requests[0]!.guid,
      instance: 1,
      className: 'Customer',
      propertyName: 'cardNumber',
    });
    expect(p.errors[0].message).toContain('Unprotect');
    expect(p.errors[0].message).toContain('Customer.cardNumber');
    expect(p.errors[1]).toMatchObject({
      request: req.requests[0]!.guid,
      instance: 2,
      className: 'Customer',
      propertyName: 'nationalId',
      pointer: '/requests/0/instances/2',
    });
    expectNoneContain([reply.text], [SECRET.cardNumber, SECRET.nationalId, '9817-3652']);
  });
});

describe('POST /transform: field and value errors (422)', () => {
  it('FIELD_UNKNOWN: a granted class with an unconfigured property', async () => {
    const req = transformRequest('fraud', 'Protect', ['email', SECRET.email], ['shoeSize', SECRET.email]);
    const p = problemAt(await transform(svc, token, req), 'FIELD_UNKNOWN', '/requests/0/instances/1');
    expect(p.errors[0]).toMatchObject({ request: req.requests[0]!.guid, instance: 1, className: 'Customer', propertyName: 'shoeSize' });
  });

  it('ACTION_NOT_CONFIGURED: unprotecting a field configured with unprotect: none, pseudonymizing an email', async () => {
    const protectedKey = await protect('segmentKey', SECRET.segmentKey);
    problemAt(
      await transform(svc, token, transformRequest('fraud', 'Unprotect', ['segmentKey', protectedKey])),
      'ACTION_NOT_CONFIGURED',
      '/requests/0/instances/0',
    );
    problemAt(
      await transform(svc, token, transformRequest('ingest', 'Pseudonymize', ['email', SECRET.email])),
      'ACTION_NOT_CONFIGURED',
      '/requests/0/instances/0',
    );
  });

  it('VALUE_TOO_SHORT: a card number too short for FF1 after keeping 6 + 4 digits', async () => {
    const reply = await transform(svc, token, transformRequest('fraud', 'Protect', ['cardNumber', '4111-9817-3']));
    const p = problemAt(reply, 'VALUE_TOO_SHORT', '/requests/0/instances/0/value');
    expect(p.errors[0]).toMatchObject({ className: 'Customer', propertyName: 'cardNumber', instance: 0 });
    expect(reply.text).not.toContain('4111-9817-3');
  });

  it('VALUE_TOO_LONG: a value over service.limits.valueLength (4096 by default); 4096 is accepted', async () => {
    const atLimit = `zz-secret-4111${'x'.repeat(4096 - 14)}`;
    ok(await transform(svc, token, protectEmailBody(atLimit)));
    const over = `${atLimit}y`;
    const reply = await transform(svc, token, transformRequest('fraud', 'Protect', ['email', 'short@example.org'], ['email', over], ['name', over]));
    const p = problemAt(reply, 'VALUE_TOO_LONG', '/requests/0/instances/1/value');
    expect(p.errors.map((e: Loose) => e.pointer)).toEqual(['/requests/0/instances/1/value', '/requests/0/instances/2/value']);
    expect(reply.text).not.toContain('xxxxxxxxxxxxxxxx');
  });

  it('VALUE_NOT_IN_ALPHABET: a lone surrogate cannot be protected', async () => {
    problemAt(
      await transform(svc, token, transformRequest('fraud', 'Protect', ['email', 'zz\ud800zz'])),
      'VALUE_NOT_IN_ALPHABET',
      '/requests/0/instances/0/value',
    );
  });

  it('PROTECTED_VALUE_INVALID: tampered, not base64url, or protected for another field — every bad value listed', async () => {
    const email = await protect('email', SECRET.email);
    const req = transformRequest('fraud', 'Unprotect', ['email', tamper(email)], ['email', 'not base64!'], ['name', email], ['email', email]);
    const reply = await transform(svc, token, req);
    const p = problemAt(reply, 'PROTECTED_VALUE_INVALID', '/requests/0/instances/0/value');
    expect(p.errors.map((e: Loose) => e.pointer)).toEqual([0, 1, 2].map((i) => `/requests/0/instances/${i}/value`));
    for (const e of p.errors) expect(e.request).toBe(req.requests[0]!.guid);
    // atomic: the one valid value is not revealed either
    expectNoneContain([reply.text], [SECRET.email, email, tamper(email)]);
  });

  it('KEY_VERSION_UNKNOWN: a protected value naming a key version the keystore does not hold', async () => {
    const email = await protect('email', SECRET.email);
    const reply = await transform(svc, token, transformRequest('fraud', 'Unprotect', ['email', withKeyVersion(email, 99)]));
    const p = problemAt(reply, 'KEY_VERSION_UNKNOWN', '/requests/0/instances/0/value');
    expect(p.errors[0].message).toContain('99');
  });
});

describe('POST /transform: bearer token errors (401 with WWW-Authenticate)', () => {
  it('TOKEN_MISSING: no Authorization header', async () => {
    const reply = await transform(svc, undefined, protectEmailBody());
    problem(reply, 'TOKEN_MISSING');
    expect(reply.headers.get('www-authenticate')).toBe('Bearer realm="veil"');
  });

  it('TOKEN_INVALID: a malformed bearer token', async () => {
    const reply = await transform(svc, 'not.a.jwt', protectEmailBody());
    problem(reply, 'TOKEN_INVALID');
    expect(reply.headers.get('www-authenticate')).toBe('Bearer realm="veil", error="invalid_token", error_description="token_invalid"');
  });

  it('TOKEN_EXPIRED: the token is refused once the clock passes exp + 30 s tolerance (injected clock)', async () => {
    const local = await startTestService();
    services.push(local);
    const t = await local.token();
    local.clock.advance(900 + 29);
    ok(await transform(local, t, protectEmailBody()));
    local.clock.advance(2);
    const reply = await transform(local, t, protectEmailBody());
    problem(reply, 'TOKEN_EXPIRED');
    expect(reply.headers.get('www-authenticate')).toBe('Bearer realm="veil", error="invalid_token", error_description="token_expired"');
    // a fresh token works again
    ok(await transform(local, await local.token(), protectEmailBody()));
  });
});

describe('POST /transform: media type, size limits and rate limits', () => {
  const json = JSON.stringify(protectEmailBody());

  it('CONTENT_TYPE_UNSUPPORTED: a body without Content-Type', async () => {
    const reply = await call(`${svc.url}/transform`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: new TextEncoder().encode(json) });
    problem(reply, 'CONTENT_TYPE_UNSUPPORTED');
  });

  it('CONTENT_TYPE_UNSUPPORTED: application/xml', async () => {
    problem(await transform(svc, token, '<x/>', { 'content-type': 'application/xml' }), 'CONTENT_TYPE_UNSUPPORTED');
  });

  it('CONTENT_TYPE_UNSUPPORTED: text/plain, even when the text is a valid transform body', async () => {
    problem(await transform(svc, token, json, { 'content-type': 'text/plain' }), 'CONTENT_TYPE_UNSUPPORTED');
  });

  it('CONTENT_TYPE_UNSUPPORTED: application/x-www-form-urlencoded', async () => {
    problem(await transform(svc, token, 'rightsContexts=1', { 'content-type': 'application/x-www-form-urlencoded' }), 'CONTENT_TYPE_UNSUPPORTED');
  });

  describe('with small limits (bodyBytes 2048, requests 2, instancesPerCall 3, valueLength 64)', () => {
    let small: TestService;
    let t: string;
    beforeAll(async () => {
      small = await startWith('service:\n  limits: { bodyBytes: 2048, requests: 2, instancesPerCall: 3, valueLength: 64 }');
      services.push(small);
      t = await small.token();
    });

    it('BODY_TOO_LARGE: a body over service.limits.bodyBytes, with Content-Length or chunked', async () => {
      const big = protectEmailBody(`zz-secret-4111${'q'.repeat(3000)}`);
      const reply = await transform(small, t, big);
      problem(reply, 'BODY_TOO_LARGE');
      expect(reply.text).not.toContain('qqqqqqqq');
      const bytes = new TextEncoder().encode(JSON.stringify(big));
      const stream = new ReadableStream({
        start(c) {
          c.enqueue(bytes.slice(0, 1500));
          c.enqueue(bytes.slice(1500));
          c.close();
        },
      });
      problem(
        await call(`${small.url}/transform`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${t}` },
          body: stream,
          duplex: 'half',
        } as RequestInit),
        'BODY_TOO_LARGE',
      );
    });

    it('LIMIT_EXCEEDED: more requests than service.limits.requests; the limit itself is accepted', async () => {
      const spec = requestSpec('fraud', 'Protect', ['email', SECRET.email]);
      ok(await transform(small, t, body(spec, spec)));
      problemAt(await transform(small, t, body(spec, spec, spec)), 'LIMIT_EXCEEDED', '/requests');
    });

    it('LIMIT_EXCEEDED: more instances in the call than service.limits.instancesPerCall', async () => {
      const two = requestSpec('fraud', 'Protect', ['email', 'a@example.org'], ['email', 'b@example.org']);
      const one = requestSpec('fraud', 'Protect', ['email', 'c@example.org']);
      ok(await transform(small, t, body(two, one)));
      problemAt(await transform(small, t, body(two, two)), 'LIMIT_EXCEEDED', '/requests');
    });

    it('VALUE_TOO_LONG: over the configured valueLength', async () => {
      ok(await transform(small, t, protectEmailBody('z'.repeat(64))));
      problemAt(await transform(small, t, protectEmailBody('z'.repeat(65))), 'VALUE_TOO_LONG', '/requests/0/instances/0/value');
    });
  });

  it('REQUEST_TIMEOUT: a body that has not arrived by the body read timeout (test/http/body-timeout.test.ts has more)', async () => {
    const slow = await startTestService({ bodyReadTimeoutMs: 300 });
    services.push(slow);
    const { reply } = await trickle(slow.url, {
      path: '/transform',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await slow.token()}` },
      body: json,
      bytesPerTick: 1,
      tickMs: 50,
    });
    problem(reply, 'REQUEST_TIMEOUT');
    expect(reply.headers.get('connection')).toBe('close');
  });

  describe('RATE_LIMITED (transformPerSecond 0.5, transformBurst 2)', () => {
    it('refuses the call after the burst with 429 and Retry-After, per client; recovers as the clock advances', async () => {
      const limited = await startWith(
        `service:\n  rateLimit: { transformPerSecond: 0.5, transformBurst: 2 }\n${await clientsYaml({ [SUPPORT_CLIENT.id]: { secret: SUPPORT_CLIENT.secret, roles: ['support'] } })}`,
      );
      services.push(limited);
      const t = await limited.token();
      ok(await transform(limited, t, protectEmailBody()));
      ok(await transform(limited, t, protectEmailBody()));
      const reply = await transform(limited, t, protectEmailBody());
      const p = problem(reply, 'RATE_LIMITED');
      expect(p.retriable).toBe(true);
      expect(reply.headers.get('retry-after')).toBe('2');
      expect(reply.text).not.toContain(SECRET.email);
      // another client has its own bucket
      const other = await limited.token(SUPPORT_CLIENT.id, SUPPORT_CLIENT.secret);
      ok(await transform(limited, other, transformRequest('support', 'Protect', ['email', SECRET.email])));
      // half the wait is not enough; the whole wait is
      limited.clock.advance(1);
      problem(await transform(limited, t, protectEmailBody()), 'RATE_LIMITED');
      limited.clock.advance(2);
      ok(await transform(limited, t, protectEmailBody()));
    });
  });
});

describe('POST /transform: audit availability', () => {
  it('AUDIT_UNAVAILABLE: an Unprotect is refused with 503 and returns nothing; a Protect still works', async () => {
    const email = await protect('email', SECRET.email);
    svc.audit.failing = true;
    try {
      const reply = await transform(svc, token, transformRequest('fraud', 'Unprotect', ['email', email]));
      const p = problem(reply, 'AUDIT_UNAVAILABLE');
      expect(p.retriable).toBe(true);
      expect(reply.text).not.toContain(SECRET.email);
      expect(reply.json.responses).toBeUndefined();
      // a call mixing protect and unprotect is refused whole
      const mixed = await transform(
        svc,
        token,
        body(requestSpec('fraud', 'Protect', ['name', SECRET.name]), requestSpec('fraud', 'Unprotect', ['email', email])),
      );
      problem(mixed, 'AUDIT_UNAVAILABLE');
      expectNoneContain([mixed.text], [SECRET.email]);
      const protectReply = ok(await transform(svc, token, protectEmailBody()));
      expect(protectReply.responses[0].instances[0].value).toBe(email);
    } finally {
      svc.audit.failing = false;
    }
    expect(ok(await transform(svc, token, transformRequest('fraud', 'Unprotect', ['email', email]))).responses[0].instances[0].value).toBe(SECRET.email);
  });
});

describe('other routes', () => {
  it('NOT_FOUND: unknown paths get a 404 problem', async () => {
    problem(await call(`${svc.url}/nope`), 'NOT_FOUND');
    problem(await call(`${svc.url}/transform/extra`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }), 'NOT_FOUND');
  });

  it('METHOD_NOT_ALLOWED: GET /transform is 405 with Allow: POST, not 404 (the catalog code is otherwise unreachable)', async () => {
    const reply = await call(`${svc.url}/transform`);
    problem(reply, 'METHOD_NOT_ALLOWED');
    expect(reply.headers.get('allow')).toMatch(/POST/);
  });
});

describe('no bad input is a server error, and nothing leaks', () => {
  it('answers a battery of hostile bodies with 4xx problem details', async () => {
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const deepValue = JSON.stringify(protectEmailBody()).replace(`"${SECRET.email}"`, deep);
    const inputs: [string, string][] = [
      ['application/json', deep],
      ['application/json', deepValue],
      ['application/json', '{"rightsContexts": [], "processingContexts": [], "requests": [{"guid": 1e999}]}'],
      [
        'application/json',
        JSON.stringify({
          rightsContexts: [{ guid: randomUUID(), evidences: Array.from({ length: 65 }, () => ({ name: 'Role', value: 'fraud' })) }],
          processingContexts: [],
          requests: [],
        }),
      ],
      [
        'application/json',
        JSON.stringify({
          rightsContexts: [{ guid: randomUUID(), evidences: [{ name: 'Role', value: 'x'.repeat(2000) }] }],
          processingContexts: [],
          requests: [],
        }),
      ],
      ['application/json', JSON.stringify({ ...protectEmailBody(), requests: [{ ...protectEmailBody().requests[0], instances: { length: 3 } }] })],
      ['application/json', '\u0000\u0001'],
      ['application/json', '{"a":"\\ud800"}'],
      ['application/json', JSON.stringify(transformRequest('fraud', 'Protect', ['cardNumber', '٤١١١٩٨١٧٣٦٥٢٠٠٤٦']))],
      ['application/json', JSON.stringify(transformRequest('fraud', 'Unprotect', ['cardNumber', ''], ['email', ''], ['name', ''], ['nationalId', '']))],
      ['application/json', JSON.stringify(transformRequest('fraud', 'Unprotect', ['email', 'oQAAAAE'], ['name', 'ogAAAAEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']))],
    ];
    for (const [type, text] of inputs) {
      const reply = await transform(svc, token, text, { 'content-type': type });
      replies.push(reply.text);
      expect(reply.status, `${type} ${text.slice(0, 80)} → ${reply.text.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
      expect(reply.status, `${type} ${text.slice(0, 80)} → ${reply.text.slice(0, 200)}`).toBeLessThan(500);
      expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    expect(svc.logs.join('')).not.toContain('unexpected error');
  });

  it('no reply body and no log line holds a value that was sent', () => {
    const logs = services.flatMap((s) => s.logs);
    expect(logs.length).toBeGreaterThan(10);
    const secrets = [...Object.values(SECRET), '9817-3652', 'zz-secret-4111'];
    expectNoneContain(logs, secrets, 'a log line');
    expectNoneContain(
      replies.filter((r) => r.includes('"code"')),
      secrets,
      'an error body',
    );
  });

  it('every catalog code that HTTP input can provoke was observed above', () => {
    /** codes of the CLI and key management, of startup, or of server faults: not reachable by a caller */
    const notByHttpInput: ErrorCode[] = [
      'KEY_UNAVAILABLE',
      'CONFIG_INVALID',
      'KEYSTORE_INVALID',
      'KEY_NOT_FOUND',
      'KEY_EXISTS',
      'KEY_MATERIAL_INVALID',
      'KEYSET_CONFLICT',
      'INTERNAL',
      // the KEK's KMS and the shared control store (covered by test/integration/keystore/kms-*.test.ts and control-*.test.ts)
      'KMS_UNAVAILABLE',
      'KMS_REFUSED',
      'CONTROL_STORE_UNAVAILABLE',
      // record-level codes of the Kafka pipelines (covered by test/integration/stream/stream-*.test.ts)
      'RECORD_MALFORMED',
      'RECORD_INVALID',
      'SCHEMA_UNKNOWN',
      'SCHEMA_PATH_UNKNOWN',
      'FIELD_MISSING',
      'KEY_MISSING',
      'REGISTRY_UNAVAILABLE',
      'RECORD_TOO_LARGE',
      'DEAD_LETTER_FAILED',
      'TRANSACTION_ABORTED',
      // unprotect over Kafka only (covered by test/integration/stream/unprotect.test.ts)
      'DEADLINE_EXCEEDED',
      'REPLY_TOPIC_NOT_ALLOWED',
      // the admin portal's pages only (covered by test/portal and test/integration/portal/portal-browser.test.ts)
      'ADMIN_ROLE_MISSING',
      'CSRF_TOKEN_INVALID',
      'PUBLISH_REFUSED',
      // the portal's POSTs from another origin (covered by test/portal/same-origin.test.ts and test/security/portal/portal-cross-origin*.test.ts)
      'CROSS_ORIGIN_REFUSED',
      // the admin portal's doors (covered by test/security/portal/portal-*.test.ts)
      'DRAFT_CHANGED',
      'FOUR_EYES_REQUIRED',
      'DRAFT_LIMIT_EXCEEDED',
      'SANDBOX_BUSY',
      'SIGN_IN_RATE_LIMITED',
      'SESSIONS_FULL',
      // the unmapped guard of the stream and the gateway (covered by test/security/stream/stream-drift*.test.ts and gateway-drift.test.ts)
      'UNMAPPED_PERSONAL_DATA',
      // veil gateway only
      ...GATEWAY_ONLY_CODES,
      // inside PostgreSQL only (covered by test/integration/db/postgres-triggers.test.ts and test/db)
      'DB_NOT_CONFIGURED',
      'DB_ROLE_UNMAPPED',
      'DB_CREDENTIALS_REFUSED',
      'DB_SERVICE_UNAVAILABLE',
      'DB_ARGUMENT_INVALID',
      'DB_RATE_LIMITED',
      // the database socket's leased keys (covered by test/security/db/db-lease-session.test.ts and db-lease-triggers.test.ts)
      'DB_LEASE_UNAVAILABLE',
      'DB_LEASE_INVALID',
      // keys scoped to the data subject (covered by test/http/subjects-transform.test.ts, test/engine/subject-scope.test.ts,
      // test/subjects and test/integration/subjects/subjects-*.test.ts)
      'SUBJECT_ERASED',
      'SUBJECT_ID_INVALID',
      'SUBJECT_REQUIRED',
      'SUBJECT_STORE_UNAVAILABLE',
      // a process refused at start, or an erasure, on a local subject-key store shared processes would split
      // (covered by test/subjects/open-subject-store.test.ts and test/deploy/helm-serve-subjects.test.ts)
      'SUBJECT_STORE_NOT_SHARED',
      // the erasure doors: the admin API, the portal's Subjects page and veil subjects (covered by
      // test/security/subjects/admin-subjects-api.test.ts, test/portal/subjects-page.test.ts, test/subjects and test/cli)
      'ERASURE_REQUEST_INVALID',
      'ERASURE_NOT_PERMITTED',
      'RECEIPT_INVALID',
    ];
    // METHOD_NOT_ALLOWED has its own test above (405 with Allow)
    const reportedAbove: ErrorCode[] = ['METHOD_NOT_ALLOWED'];
    const missing = (Object.keys(ERROR_CATALOG) as ErrorCode[]).filter((c) => !covered.has(c) && !notByHttpInput.includes(c) && !reportedAbove.includes(c));
    expect(missing).toEqual([]);
  });
});
