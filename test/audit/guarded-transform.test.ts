import { describe, expect, it } from 'vitest';
import type { AuditEvent, AuditSink } from '../../src/audit/index.ts';
import { MemoryAuditSink } from '../helpers/memory-audit-sink.ts';
import { GuardedTransform, type AuditScope, type GuardedCall, type GuardedCaller } from '../../src/audit/guarded-transform.ts';
import { VeilError, type TransformRequest } from '../../src/engine/index.ts';
import { body, engineFixture, requestSpec, tamper, transformRequest } from '../helpers/engine-fixture.ts';
import { IdentityError } from '../../src/identity/errors.ts';
import { DoorError } from '../../src/errors/door-errors.ts';

const { engine } = engineFixture();
const NOW = new Date('2026-01-02T03:04:05.000Z');
const fraud: GuardedCaller = { clientId: 'desk', subject: 'agent-7', issuer: 'https://veil.test', roles: ['fraud'] };
const support: GuardedCaller = { ...fraud, roles: ['support'] };

/** Values that must never reach an audit event. */
const CLEAR = { email: 'zz-audit.guard@example.org', name: 'Zz Guarded Name', cardNumber: '4111-2222-3333-4444' };
const protectedOf = (property: keyof typeof CLEAR) =>
  engine.transform(transformRequest('fraud', 'Protect', [property, CLEAR[property]]), fraud).responses[0]!.instances[0]!.value;
const P = { email: protectedOf('email'), name: protectedOf('name') };

function guard(audit: AuditSink, scope: AuditScope = 'revealing') {
  return new GuardedTransform({ engine, audit, now: () => NOW, channel: 'http', scope });
}

/** A call by `caller` with `payload`; warnings collected in `warnings`. */
function call(payload: TransformRequest | unknown, caller: GuardedCaller | VeilError = fraud, warnings: string[] = []): GuardedCall {
  return {
    requestId: 'req-1',
    body: payload,
    authenticate: async () => {
      if (caller instanceof VeilError) throw caller;
      return caller;
    },
    admit: () => payload,
    warn: (m) => warnings.push(m),
  };
}

const unprotectEmail = () => transformRequest('fraud', 'Unprotect', ['email', P.email], ['email', P.email], ['name', P.name]);

function expectNoValues(events: readonly AuditEvent[]): void {
  const text = JSON.stringify(events);
  for (const v of [...Object.values(CLEAR), ...Object.values(P)]) expect(text).not.toContain(v);
}

describe('GuardedTransform: audit before any cleartext leaves', () => {
  it('an unprotect returns its values only after its audit record is written', async () => {
    const order: string[] = [];
    let release!: () => void;
    const written = new Promise<void>((r) => (release = r));
    const events: AuditEvent[] = [];
    const slowSink: AuditSink = {
      async record(e) {
        order.push('record started');
        await written;
        events.push(e);
        order.push('record written');
      },
      async close() {},
    };
    const running = guard(slowSink)
      .run(call(unprotectEmail()))
      .then((o) => {
        order.push('values returned');
        return o;
      });
    await new Promise((r) => setTimeout(r, 20));
    expect(order).toEqual(['record started']);
    release();
    const outcome = await running;
    expect(order).toEqual(['record started', 'record written', 'values returned']);
    expect(outcome.ok && outcome.response.responses[0]!.instances.map((i) => i.value)).toEqual([CLEAR.email, CLEAR.email, CLEAR.name]);
    expect(events).toEqual([
      {
        eventId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        time: NOW.toISOString(),
        requestId: 'req-1',
        channel: 'http',
        client: 'desk',
        subject: 'agent-7',
        issuer: 'https://veil.test',
        outcome: 'ok',
        instances: 3,
        fields: [
          { className: 'Customer', propertyName: 'email', action: 'Unprotect', count: 2 },
          { className: 'Customer', propertyName: 'name', action: 'Unprotect', count: 1 },
        ],
      },
    ]);
    expectNoValues(events);
  });

  it('fail-closed: when the sink throws, an unprotect is refused with AUDIT_UNAVAILABLE and returns no value', async () => {
    const sink = new MemoryAuditSink();
    sink.failing = true;
    const outcome = await guard(sink).run(call(unprotectEmail()));
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe('AUDIT_UNAVAILABLE');
    expect(outcome.error.status).toBe(503);
    expect(JSON.stringify(outcome)).not.toContain(CLEAR.email);
    // a call mixing protect and unprotect is refused whole
    const mixed = await guard(sink).run(
      call(body(requestSpec('fraud', 'Protect', ['name', CLEAR.name]), requestSpec('fraud', 'Unprotect', ['email', P.email]))),
    );
    expect(!mixed.ok && mixed.error.code).toBe('AUDIT_UNAVAILABLE');
    expect(JSON.stringify(mixed)).not.toContain(CLEAR.email);
  });

  it('scope revealing: a Protect call is not audited and works while the sink fails; scope every: it is audited, and refused without a record', async () => {
    const protect = () => call(transformRequest('fraud', 'Protect', ['email', CLEAR.email]));
    const sink = new MemoryAuditSink();
    expect((await guard(sink, 'revealing').run(protect())).ok).toBe(true);
    expect(sink.events).toEqual([]);
    expect((await guard(sink, 'every').run(protect())).ok).toBe(true);
    expect(sink.events.map((e) => [e.outcome, e.fields.map((f) => f.action)])).toEqual([['ok', ['Protect']]]);
    sink.failing = true;
    expect((await guard(sink, 'revealing').run(protect())).ok).toBe(true);
    const every = await guard(sink, 'every').run(protect());
    expect(!every.ok && every.error.code).toBe('AUDIT_UNAVAILABLE');
  });

  it('denied calls are audited: 403 with the caller, 401 without one (instances counted from the body, no names from it)', async () => {
    const sink = new MemoryAuditSink();
    const notGranted = await guard(sink).run(call(transformRequest('support', 'Unprotect', ['name', P.name], ['email', P.email]), support));
    expect(!notGranted.ok && notGranted.error.code).toBe('ACTION_NOT_GRANTED');
    const noToken = await guard(sink).run(
      call(transformRequest('fraud', 'Protect', ['email', CLEAR.email], ['name', CLEAR.name]), new IdentityError('TOKEN_MISSING', 'no token')),
    );
    expect(!noToken.ok && noToken.error.code).toBe('TOKEN_MISSING');
    expect(sink.events.map((e) => [e.outcome, e.code, e.client, e.instances, e.fields])).toEqual([
      ['denied', 'ACTION_NOT_GRANTED', 'desk', 2, []],
      ['denied', 'TOKEN_MISSING', undefined, 2, []],
    ]);
    expectNoValues(sink.events);
  });

  it('a denied call stays refused, with its own code, when its record cannot be written; the adapter is told', async () => {
    const sink = new MemoryAuditSink();
    sink.failing = true;
    const warnings: string[] = [];
    const outcome = await guard(sink).run(call(transformRequest('fraud', 'Protect', ['email', CLEAR.email]), support, warnings));
    expect(!outcome.ok && outcome.error.code).toBe('ROLE_NOT_HELD');
    expect(warnings).toEqual(['audit sink failed to record a denied call']);
  });

  it('an unprotect that fails on its values is audited once as failed, with the planned fields; a failed Protect is not (scope revealing)', async () => {
    const sink = new MemoryAuditSink();
    const tampered = tamper(P.email);
    const failed = await guard(sink).run(call(transformRequest('fraud', 'Unprotect', ['email', tampered])));
    expect(!failed.ok && failed.error.code).toBe('PROTECTED_VALUE_INVALID');
    const badCard = await guard(sink).run(call(transformRequest('fraud', 'Protect', ['cardNumber', 'x'])));
    expect(badCard.ok).toBe(false);
    expect(sink.events.map((e) => [e.outcome, e.code, e.fields])).toEqual([
      ['failed', 'PROTECTED_VALUE_INVALID', [{ className: 'Customer', propertyName: 'email', action: 'Unprotect', count: 1 }]],
    ]);
    expect(JSON.stringify(sink.events)).not.toContain(tampered);
  });

  it('scope every records refusals before planning too (400), and never an AUDIT_UNAVAILABLE', async () => {
    const sink = new MemoryAuditSink();
    const malformed = await guard(sink, 'every').run(call({ nonsense: true }));
    expect(!malformed.ok && malformed.error.code).toBe('REQUEST_MALFORMED');
    expect(sink.events.map((e) => [e.outcome, e.code, e.client])).toEqual([['failed', 'REQUEST_MALFORMED', 'desk']]);
  });

  it("the adapter's checks refuse the call with their code; an unexpected error is INTERNAL and handed back for logging", async () => {
    const sink = new MemoryAuditSink();
    const limited = await guard(sink).run({
      ...call(unprotectEmail()),
      admit: () => {
        throw new DoorError('LIMIT_EXCEEDED', 'too many');
      },
    });
    expect(!limited.ok && limited.error.code).toBe('LIMIT_EXCEEDED');
    const boom = new TypeError('boom');
    const broken = await guard(sink).run({
      ...call(unprotectEmail()),
      admit: () => {
        throw boom;
      },
    });
    expect(broken.ok).toBe(false);
    if (broken.ok) return;
    expect(broken.error.code).toBe('INTERNAL');
    expect('unexpected' in broken && broken.unexpected).toBe(boom);
    expect(sink.events).toEqual([]);
  });

  it('events never hold a value, even when a denied call puts values where field names go', async () => {
    const sink = new MemoryAuditSink();
    await guard(sink).run(
      call(body({ roles: ['support'], action: 'Unprotect', instances: [{ className: CLEAR.email, propertyName: CLEAR.name, value: P.email }] }), support),
    );
    expect(sink.events).toHaveLength(1);
    expectNoValues(sink.events);
  });
});
