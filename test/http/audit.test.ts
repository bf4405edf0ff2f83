import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../src/audit/audit-sink.ts';
import type { TestService } from '../helpers/http-service.ts';
import { requestSpec, tamper, transformRequest } from '../helpers/engine-fixture.ts';
import { SECRET, body, clientsYaml, startWith, transform, type Reply } from './support.ts';

/**
 * The audit trail over HTTP: every call that reveals cleartext (Unprotect) and every denied call
 * (401/403) produces exactly one event naming client, time, request id, fields and counts and
 * outcome — never a value. Protect calls are not audited.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

const SUPPORT = { id: 'support-app', secret: 'zz-client-secret-support-7f3a9c' };
const CONFIGURED = new Set(['Customer.email', 'Customer.cardNumber', 'Customer.nationalId', 'Customer.name', 'Customer.segmentKey']);

let svc: TestService;
let token: string;
let supportToken: string;
/** protected forms of SECRET, made once */
const P: Record<string, string> = {};
/** everything that must never reach an audit event */
const secrets: string[] = [...Object.values(SECRET), SUPPORT.secret];

beforeAll(async () => {
  svc = await startWith(await clientsYaml({ [SUPPORT.id]: { secret: SUPPORT.secret, roles: ['support'] } }));
  token = await svc.token();
  supportToken = await svc.token(SUPPORT.id, SUPPORT.secret);
  secrets.push(token, supportToken, svc.service.devClient!.secret);
  const res = await transform(svc, token, transformRequest('fraud', 'Protect', ...Object.entries(SECRET)));
  for (const i of res.json.responses[0].instances) P[i.propertyName] = i.value;
  secrets.push(...Object.values(P));
});

afterAll(async () => svc?.close());

beforeEach(async () => {
  svc.audit.events.length = 0;
  svc.audit.failing = false;
  svc.clock.advance(7);
  // tests move the clock past token expiry: fresh tokens for each
  token = await svc.token();
  supportToken = await svc.token(SUPPORT.id, SUPPORT.secret);
  secrets.push(token, supportToken);
});

function eventsOf(reply: Reply): AuditEvent[] {
  expect(reply.requestId).not.toBe('');
  return svc.audit.events.filter((e) => e.requestId === reply.requestId);
}

function onlyEventOf(reply: Reply): AuditEvent {
  const events = eventsOf(reply);
  expect(events, JSON.stringify(svc.audit.events)).toHaveLength(1);
  return events[0]!;
}

function expectNoValues(events: readonly AuditEvent[] = svc.audit.events): void {
  const text = JSON.stringify(events);
  for (const s of secrets) expect(text.includes(s), `an audit event holds a value or secret (${s.slice(0, 10)}…)`).toBe(false);
}

describe('audit of Unprotect calls', () => {
  it('one event per call: client, subject, issuer, time, request id, fields with action and count, outcome ok', async () => {
    const reply = await transform(
      svc,
      token,
      transformRequest('fraud', 'Unprotect', ['email', P.email!], ['cardNumber', P.cardNumber!], ['email', P.email!], ['name', P.name!]),
    );
    expect(reply.status, reply.text).toBe(200);
    expect(svc.audit.events).toHaveLength(1);
    const e = onlyEventOf(reply);
    expect(e).toEqual({
      eventId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      time: svc.clock.now.toISOString(),
      requestId: reply.requestId,
      channel: 'http',
      client: 'veil-dev',
      subject: 'veil-dev',
      issuer: 'http://veil.test',
      outcome: 'ok',
      instances: 4,
      fields: expect.arrayContaining([
        { className: 'Customer', propertyName: 'email', action: 'Unprotect', count: 2 },
        { className: 'Customer', propertyName: 'cardNumber', action: 'Unprotect', count: 1 },
        { className: 'Customer', propertyName: 'name', action: 'Unprotect', count: 1 },
      ]),
    });
    expect(e.fields).toHaveLength(3);
    expectNoValues();
  });

  it('names the configured client that called, and uses the x-request-id the caller gave', async () => {
    const reply = await transform(svc, supportToken, transformRequest('support', 'Unprotect', ['email', P.email!]), {
      'x-request-id': 'case-4711.audit',
    });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.requestId).toBe('case-4711.audit');
    expect(onlyEventOf(reply)).toMatchObject({ client: SUPPORT.id, subject: SUPPORT.id, outcome: 'ok', instances: 1, requestId: 'case-4711.audit' });
  });

  it('a call with several requests, protect and unprotect mixed, is one event covering all of them', async () => {
    const reply = await transform(
      svc,
      token,
      body(
        requestSpec('fraud', 'Protect', ['name', SECRET.name]),
        requestSpec('fraud', 'Unprotect', ['nationalId', P.nationalId!], ['email', P.email!]),
        requestSpec('fraud', 'Unprotect', ['email', P.email!]),
      ),
    );
    expect(reply.status, reply.text).toBe(200);
    const e = onlyEventOf(reply);
    expect(e.outcome).toBe('ok');
    expect(e.instances).toBe(4);
    expect(e.fields).toEqual(
      expect.arrayContaining([
        { className: 'Customer', propertyName: 'name', action: 'Protect', count: 1 },
        { className: 'Customer', propertyName: 'nationalId', action: 'Unprotect', count: 1 },
        { className: 'Customer', propertyName: 'email', action: 'Unprotect', count: 2 },
      ]),
    );
    expect(e.fields).toHaveLength(3);
    expectNoValues();
  });

  it('an unprotect that fails on its values (422, nothing revealed) is audited once, and not as a success', async () => {
    const reply = await transform(svc, token, transformRequest('fraud', 'Unprotect', ['email', tamper(P.email!)]));
    expect(reply.status).toBe(422);
    const e = onlyEventOf(reply);
    expect(e.outcome).not.toBe('ok');
    expect(e.code).toBe('PROTECTED_VALUE_INVALID');
    expectNoValues();
  });

  it('an unprotect refused before anything is planned (400, 422 field) records no success', async () => {
    const malformed = transformRequest('fraud', 'Unprotect', ['email', P.email!]);
    malformed.requests[0]!.guid = 'not-a-uuid';
    const bad = await transform(svc, token, malformed);
    expect(bad.status).toBe(400);
    const unknown = await transform(svc, token, transformRequest('fraud', 'Unprotect', ['shoeSize', P.email!]));
    expect(unknown.status).toBe(422);
    for (const r of [bad, unknown]) expect(eventsOf(r).filter((e) => e.outcome === 'ok')).toEqual([]);
    expectNoValues();
  });
});

describe('audit of denied calls', () => {
  const protectBody = () => transformRequest('fraud', 'Protect', ['email', SECRET.email], ['name', SECRET.name]);

  it('401 without a token, with an invalid and with an expired token: one denied event each, with its code', async () => {
    const missing = await transform(svc, undefined, protectBody());
    const invalid = await transform(svc, `${token.slice(0, -4)}AAAA`, protectBody());
    const before = svc.clock.now.toISOString();
    svc.clock.advance(900 + 31);
    const expired = await transform(svc, token, protectBody());
    for (const [reply, code, time] of [
      [missing, 'TOKEN_MISSING', before],
      [invalid, 'TOKEN_INVALID', before],
      [expired, 'TOKEN_EXPIRED', svc.clock.now.toISOString()],
    ] as const) {
      expect(reply.status).toBe(401);
      const e = onlyEventOf(reply);
      expect(e).toMatchObject({ outcome: 'denied', code, channel: 'http', instances: 2, requestId: reply.requestId });
      // the caller is unknown: no client is claimed from an unverified token
      expect(e.client).toBeUndefined();
      expect(e.time).toBe(time);
      for (const f of e.fields) expect(CONFIGURED.has(`${f.className}.${f.propertyName}`)).toBe(true);
    }
    expect(svc.audit.events).toHaveLength(3);
    expectNoValues();
  });

  it('403 ROLE_NOT_HELD, RIGHTS_CONTEXT_UNMATCHED and ACTION_NOT_GRANTED: one denied event each naming the client', async () => {
    const roleNotHeld = await transform(svc, supportToken, protectBody());
    const unmatched = await transform(svc, token, body({ rights: [], action: 'Protect', instances: [['email', SECRET.email]] }));
    const notGranted = await transform(
      svc,
      supportToken,
      transformRequest('support', 'Unprotect', ['cardNumber', P.cardNumber!], ['nationalId', P.nationalId!], ['email', P.email!]),
    );
    for (const [reply, code, client, instances] of [
      [roleNotHeld, 'ROLE_NOT_HELD', SUPPORT.id, 2],
      [unmatched, 'RIGHTS_CONTEXT_UNMATCHED', 'veil-dev', 1],
      [notGranted, 'ACTION_NOT_GRANTED', SUPPORT.id, 3],
    ] as const) {
      expect(reply.status, reply.text).toBe(403);
      const e = onlyEventOf(reply);
      expect(e).toMatchObject({ outcome: 'denied', code, client, subject: client, issuer: 'http://veil.test', instances, time: svc.clock.now.toISOString() });
      // field names, when given, are configured ones: never caller text
      for (const f of e.fields) expect(CONFIGURED.has(`${f.className}.${f.propertyName}`)).toBe(true);
    }
    expect(svc.audit.events).toHaveLength(3);
    expectNoValues();
  });

  it('a denied call whose class/property hold a value does not put that value into the audit', async () => {
    const reply = await transform(
      svc,
      supportToken,
      body({ roles: ['support'], action: 'Unprotect', instances: [{ className: SECRET.email, propertyName: SECRET.nationalId, value: P.email! }] }),
    );
    expect(reply.status).toBe(403);
    onlyEventOf(reply);
    expectNoValues();
  });

  it('a denied call is refused even when the audit sink fails', async () => {
    svc.audit.failing = true;
    const reply = await transform(svc, supportToken, protectBody());
    expect(reply.status).toBe(403);
    expect(reply.json.code).toBe('ROLE_NOT_HELD');
    expect(svc.logs.some((l) => l.includes(reply.requestId) && l.includes('audit sink failed'))).toBe(true);
  });
});

describe('calls that are not audited', () => {
  it('Protect, Mask and Pseudonymize calls produce no event', async () => {
    const calls = [
      transformRequest('fraud', 'Protect', ...Object.entries(SECRET)),
      transformRequest('support', 'Mask', ['cardNumber', SECRET.cardNumber]),
      transformRequest('ingest', 'Pseudonymize', ['name', SECRET.name]),
      body(requestSpec('ingest', 'Protect', ['email', SECRET.email]), requestSpec('fraud', 'Protect', ['name', SECRET.name])),
    ];
    for (const c of calls) {
      const reply = await transform(svc, token, c);
      expect(reply.status, reply.text).toBe(200);
    }
    expect(svc.audit.events).toEqual([]);
  });

  it('a Protect call still works, unaudited, while the sink fails', async () => {
    svc.audit.failing = true;
    const reply = await transform(svc, token, transformRequest('fraud', 'Protect', ['email', SECRET.email]));
    expect(reply.status).toBe(200);
    expect((reply.json as Loose).responses[0].instances[0].value).toBe(P.email);
  });
});
