import { describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../helpers/memory-audit-sink.ts';
import { GuardedTransform } from '../../src/audit/guarded-transform.ts';
import { FieldTransformer } from '../../src/gateway/field-transformer.ts';
import { engineFixture } from '../helpers/engine-fixture.ts';
import { IdentityError } from '../../src/identity/errors.ts';

const email = { className: 'Customer', propertyName: 'email' };
const card = { className: 'Customer', propertyName: 'cardNumber' };
const name = { className: 'Customer', propertyName: 'name' };
const caller = (...roles: string[]) => ({ roles, subject: roles.join('+') || 'nobody', clientId: 'c', issuer: 'test' });

function setup() {
  const { engine } = engineFixture();
  const audit = new MemoryAuditSink();
  const warnings: string[] = [];
  const guard = new GuardedTransform({ engine, audit, now: () => new Date(0), channel: 'gateway', scope: 'revealing' });
  const t = new FieldTransformer({ engine, guard, actions: { protect: 'Protect', unprotect: 'Unprotect' }, warn: (m) => warnings.push(m) });
  return { t, audit, warnings };
}

describe('the gateway field transformer', () => {
  it('protects a whole body, or refuses it whole', async () => {
    const { t } = setup();
    const out = await t.protect('r1', caller('ingest'), [
      { field: email, value: 'alice@example.com' },
      { field: card, value: '4111-1111-1111-1111' },
    ]);
    expect(out[0]).not.toContain('alice');
    expect(out[1]).toMatch(/^4111-11\d\d-\d{4}-1111$/);
    await expect(
      t.protect('r2', caller('support'), [
        { field: email, value: 'a@example.com' },
        { field: card, value: '4111-1111-1111-1111' },
      ]),
    ).rejects.toMatchObject({ code: 'ACTION_NOT_GRANTED', details: [{ pointer: '/requests/0/instances/1' }] });
  });

  it('reveals per field: clear where granted, the ifDenied action where that is granted, else unchanged', async () => {
    const { t, audit } = setup();
    const values = ['alice@example.com', '4111-1111-1111-1111', 'Alice'];
    const [pe, pc, pn] = await t.protect('p', caller('ingest'), [
      { field: email, value: values[0]! },
      { field: card, value: values[1]! },
      { field: name, value: values[2]! },
    ]);
    const asked = [
      { field: email, value: pe! },
      { field: card, value: pc!, ifDenied: 'Mask' },
      { field: name, value: pn! },
      { field: card, value: pc! },
    ];
    const un = (text: string) => ({ text, action: 'Unprotect' });
    expect(await t.reveal('f', caller('fraud'), asked)).toEqual([...values, values[1]].map((v) => un(v!)));
    expect(await t.reveal('s', caller('support'), asked)).toEqual([
      un('alice@example.com'),
      { text: '****-****-****-1111', action: 'Mask' },
      undefined,
      undefined,
    ]);
    expect(await t.reveal('n', caller(), asked)).toEqual([undefined, undefined, undefined, undefined]);
    // one audit record per revealing call (the masked card counted in it), never a value
    expect(audit.events.map((e) => [e.requestId, e.channel, e.outcome, e.instances])).toEqual([
      ['f', 'gateway', 'ok', 4],
      ['s', 'gateway', 'ok', 2],
    ]);
    expect(JSON.stringify(audit.events)).not.toContain('alice');
  });

  it('leaves a value the engine refuses in place and reveals the others', async () => {
    const { t, warnings } = setup();
    const [pe] = await t.protect('p', caller('ingest'), [{ field: email, value: 'alice@example.com' }]);
    const out = await t.reveal('r', caller('fraud'), [
      { field: email, value: 'not-a-protected-value' },
      { field: email, value: pe! },
    ]);
    expect(out).toEqual([undefined, { text: 'alice@example.com', action: 'Unprotect' }]);
    expect(warnings).toEqual([]);
  });

  it('refuses to reveal when the audit cannot be written, and records refused tokens', async () => {
    const { t, audit } = setup();
    const [pe] = await t.protect('p', caller('ingest'), [{ field: email, value: 'alice@example.com' }]);
    audit.failing = true;
    await expect(t.reveal('r', caller('fraud'), [{ field: email, value: pe! }])).rejects.toMatchObject({ code: 'AUDIT_UNAVAILABLE' });
    // masking reveals nothing, so it does not need the audit
    const [pc] = await t.protect('p2', caller('ingest'), [{ field: card, value: '4111-1111-1111-1111' }]);
    expect(await t.reveal('m', caller('support'), [{ field: card, value: pc!, ifDenied: 'Mask' }])).toEqual([{ text: '****-****-****-1111', action: 'Mask' }]);
    audit.failing = false;
    await t.refuse('t', new IdentityError('TOKEN_INVALID', 'bad'));
    expect(audit.events.at(-1)).toMatchObject({ requestId: 't', channel: 'gateway', outcome: 'denied', code: 'TOKEN_INVALID' });
  });

  it("plans a shape of call once: the same roles and fields reuse the plan with this call's values", async () => {
    const { engine } = engineFixture();
    const audit = new MemoryAuditSink();
    const guard = new GuardedTransform({ engine, audit, now: () => new Date(0), channel: 'gateway', scope: 'revealing' });
    const t = new FieldTransformer({ engine, guard, actions: { protect: 'Protect', unprotect: 'Unprotect' }, warn: () => undefined });
    let plans = 0;
    const planChecked = engine.planChecked.bind(engine);
    engine.planChecked = (...a: Parameters<typeof planChecked>) => (plans++, planChecked(...a));
    const protectedValues: string[][] = [];
    for (const who of ['alice', 'bob', 'carol'])
      protectedValues.push(
        await t.protect(who, caller('ingest'), [
          { field: email, value: `${who}@example.com` },
          { field: name, value: who },
        ]),
      );
    expect(plans).toBe(1);
    expect(new Set(protectedValues.map((p) => p[0])).size).toBe(3);
    for (const [i, who] of ['alice', 'bob', 'carol'].entries()) {
      expect(
        await t.reveal(who, caller('fraud'), [
          { field: email, value: protectedValues[i]![0]! },
          { field: name, value: protectedValues[i]![1]! },
        ]),
      ).toEqual([
        { text: `${who}@example.com`, action: 'Unprotect' },
        { text: who, action: 'Unprotect' },
      ]);
    }
    expect(plans).toBe(2);
    // the plans kept hold no value of any call
    const kept = JSON.stringify([...(t as unknown as { plans: Map<string, unknown> }).plans.values()]);
    for (const who of ['alice', 'bob', 'carol']) expect(kept).not.toContain(who);
    expect(kept).toContain('"instances":[]');
    // every revealing call still has its own audit record, counting its own fields
    expect(audit.events.map((e) => [e.requestId, e.instances, e.fields.map((f) => f.propertyName)])).toEqual(
      ['alice', 'bob', 'carol'].map((w) => [w, 2, ['email', 'name']]),
    );
    // other fields, another order: another plan
    await t.protect('d', caller('ingest'), [
      { field: name, value: 'dave' },
      { field: email, value: 'dave@example.com' },
    ]);
    expect(plans).toBe(3);
  });

  it("never hands one caller's plan to another: roles are keyed as JSON (a role whose text joins two is not them), any order shares", async () => {
    const { t } = setup();
    const [pe] = await t.protect('p', caller('ingest'), [{ field: email, value: 'alice@example.com' }]);
    const asked = [{ field: email, value: pe! }];
    expect(await t.reveal('a', caller('fraud', 'support'), asked)).toEqual([{ text: 'alice@example.com', action: 'Unprotect' }]);
    expect(await t.reveal('b', caller('fraud\u0000support'), asked)).toEqual([undefined]);
    expect(await t.reveal('c', caller('fraud\u0001support'), asked)).toEqual([undefined]);
    expect(await t.reveal('d', caller('support', 'fraud'), asked)).toEqual([{ text: 'alice@example.com', action: 'Unprotect' }]);
    expect(await t.reveal('e', caller(), asked)).toEqual([undefined]);
  });

  it('under a reused plan, a value the engine refuses stays in place and the others are revealed', async () => {
    const { t, warnings } = setup();
    const [p1, p2] = await t.protect('p', caller('ingest'), [
      { field: email, value: 'a@example.com' },
      { field: email, value: 'b@example.com' },
    ]);
    expect(
      await t.reveal('r1', caller('fraud'), [
        { field: email, value: p1! },
        { field: email, value: p2! },
      ]),
    ).toEqual([
      { text: 'a@example.com', action: 'Unprotect' },
      { text: 'b@example.com', action: 'Unprotect' },
    ]);
    expect(
      await t.reveal('r2', caller('fraud'), [
        { field: email, value: 'not-a-protected-value' },
        { field: email, value: p2! },
      ]),
    ).toEqual([undefined, { text: 'b@example.com', action: 'Unprotect' }]);
    expect(warnings).toEqual([]);
  });
});
