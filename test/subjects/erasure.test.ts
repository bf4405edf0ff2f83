import { afterEach, describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../helpers/memory-audit-sink.ts';
import { ErasureService, type SubjectActor } from '../../src/subjects/erasure.ts';
import { openSubjectKeyStore, type SubjectKeyStore } from '../../src/subjects/index.ts';
import { verifyReceipt } from '../../src/subjects/receipt.ts';
import { cleanup, keystoreIn, tempDir } from './helpers.ts';

const ID = 'erin.erasure@example.org';
const NOW = new Date('2026-11-27T10:00:00.000Z');
const stores: SubjectKeyStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  await cleanup();
});

const actor = (by = 'dpo'): SubjectActor => ({
  by,
  channel: 'admin',
  requestId: 'req-1',
  caller: { clientId: 'dpo-client', subject: by, issuer: 'https://veil.example' },
});

async function setup() {
  const dir = await tempDir();
  const keys = await keystoreIn(dir);
  const store = await openSubjectKeyStore({ keystore: keys, dataDir: dir, maxStalenessMs: 50 });
  stores.push(store);
  const audit = new MemoryAuditSink();
  const service = new ErasureService({ store, keys, audit, issuer: 'https://veil.example', now: () => NOW });
  return { store, keys, audit, service };
}

describe('the erasure service', () => {
  it('erases, returns a receipt that verifies, and records the erasure by reference only', async () => {
    const { store, keys, audit, service } = await setup();
    const key = await store.keyFor(ID);
    const result = await service.erase(ID, 'Art. 17 request 4711', actor());
    expect(result.erasure).toMatchObject({ subject: key.ref, generation: 1, by: 'dpo', alreadyErased: false });
    expect(await verifyReceipt(result.receipt, keys, { issuer: 'https://veil.example' })).toEqual(result.claims);
    expect(result.claims).toMatchObject({ sub: key.ref, by: 'dpo', reason: 'Art. 17 request 4711', destroyedKey: result.erasure.destroyedKey });
    expect(await store.status(ID)).toMatchObject({ state: 'erased' });
    expect(audit.events).toEqual([
      expect.objectContaining({
        channel: 'admin',
        outcome: 'ok',
        client: 'dpo-client',
        requestId: 'req-1',
        instances: 0,
        fields: [],
        admin: { action: 'subject.erase', target: `subject ${key.ref}` },
        erasure: { subject: key.ref, generation: 1, alreadyErased: false, receipt: result.claims.jti, reason: 'Art. 17 request 4711' },
      }),
    ]);
    const again = await service.erase(ID, 'duplicate request', actor('dpo2'));
    expect(again.claims).toMatchObject({ alreadyErased: true, destroyedKey: result.erasure.destroyedKey, by: 'dpo2' });
    expect(JSON.stringify(audit.events)).not.toContain(ID);
  });

  it('status answers the state and reference, never a key, and is recorded', async () => {
    const { store, audit, service } = await setup();
    expect(await service.status(ID, actor())).toMatchObject({ state: 'unknown' });
    const key = await store.keyFor(ID);
    const status = await service.status(ID, actor());
    expect(status).toMatchObject({ state: 'exists', subject: key.ref, generation: 1 });
    expect(Object.keys(status).sort()).toEqual(['createdAt', 'generation', 'state', 'subject']);
    expect(audit.events.map((e) => [e.admin?.action, e.erasure?.state])).toEqual([
      ['subject.status', 'unknown'],
      ['subject.status', 'exists'],
    ]);
    expect(JSON.stringify(audit.events)).not.toContain(ID);
  });

  it.each([
    ['no reason', undefined],
    ['an empty reason', ''],
    ['a blank reason', '   '],
    ['a number', 42],
    ['a newline', 'line one\nline two'],
    ['a C1 control', 'why\u0085'],
    ['a lone surrogate', 'why \ud800'],
    ['501 characters', 'x'.repeat(501)],
    ['the subject id', `erase ${ID.toUpperCase()} now`],
  ])('refuses %s as a reason (ERASURE_REQUEST_INVALID), erases nothing, records the refusal without the id', async (_label, reason) => {
    const { store, audit, service } = await setup();
    await store.keyFor(ID);
    await expect(service.erase(ID, reason, actor())).rejects.toMatchObject({ code: 'ERASURE_REQUEST_INVALID' });
    expect(await store.status(ID)).toMatchObject({ state: 'exists' });
    expect(audit.events).toEqual([expect.objectContaining({ outcome: 'denied', code: 'ERASURE_REQUEST_INVALID', admin: { action: 'subject.erase' } })]);
    expect(JSON.stringify(audit.events)).not.toContain(ID.slice(0, 8));
  });

  it('accepts a reason of exactly 500 characters, astral ones counted once', async () => {
    const { service } = await setup();
    await expect(service.erase(ID, '😀'.repeat(500), actor())).resolves.toMatchObject({ claims: { reason: '😀'.repeat(500) } });
  });

  it.each([
    ['a control character', 'bob\u0000'],
    ['nothing', ''],
    ['a newline', 'a\nb'],
    ['over 512 bytes', 'é'.repeat(300)],
  ])('refuses a subject id with %s (SUBJECT_ID_INVALID) without echoing it', async (_label, id) => {
    const { audit, service } = await setup();
    const error = (await service.erase(id, 'a reason', actor()).catch((e: unknown) => e)) as Error;
    expect(error).toMatchObject({ code: 'SUBJECT_ID_INVALID' });
    if (id) expect(error.message).not.toContain(id);
    await expect(service.status(id, actor())).rejects.toMatchObject({ code: 'SUBJECT_ID_INVALID' });
    expect(audit.events.map((e) => e.code)).toEqual(['SUBJECT_ID_INVALID', 'SUBJECT_ID_INVALID']);
  });

  it('refuses an unacceptable eraser name', async () => {
    const { service } = await setup();
    await expect(service.erase(ID, 'a reason', actor('evil\nforged line'))).rejects.toMatchObject({ code: 'ERASURE_REQUEST_INVALID' });
  });

  it('authorize: admin-publisher erases; any admin role reads a status; others are refused and recorded', async () => {
    const { audit, service } = await setup();
    await expect(service.authorize(['admin-publisher'], 'erase', actor())).resolves.toBeUndefined();
    await expect(service.authorize(['admin-viewer'], 'status', actor())).resolves.toBeUndefined();
    await expect(service.authorize(['admin-tester'], 'status', actor())).resolves.toBeUndefined();
    await expect(service.authorize(['admin-viewer', 'admin-editor'], 'erase', actor())).rejects.toMatchObject({ code: 'ERASURE_NOT_PERMITTED', status: 403 });
    await expect(service.authorize(['support'], 'status', actor())).rejects.toMatchObject({ code: 'ERASURE_NOT_PERMITTED' });
    expect(audit.events.map((e) => [e.admin?.action, e.outcome, e.code])).toEqual([
      ['subject.erase', 'denied', 'ERASURE_NOT_PERMITTED'],
      ['subject.status', 'denied', 'ERASURE_NOT_PERMITTED'],
    ]);
  });

  it('an audit sink that fails: AUDIT_UNAVAILABLE, the subject is erased, erasing again records it and returns a receipt', async () => {
    const { store, audit, service } = await setup();
    await store.keyFor(ID);
    audit.failing = true;
    await expect(service.erase(ID, 'a reason', actor())).rejects.toMatchObject({ code: 'AUDIT_UNAVAILABLE' });
    expect(await store.status(ID)).toMatchObject({ state: 'erased' });
    await expect(service.status(ID, actor())).rejects.toMatchObject({ code: 'AUDIT_UNAVAILABLE' });
    audit.failing = false;
    expect((await service.erase(ID, 'a reason', actor())).claims.alreadyErased).toBe(true);
    expect(audit.events).toHaveLength(1);
  });

  it('a store that cannot serve: its error, recorded as failed', async () => {
    const { store, audit, service } = await setup();
    await store.close();
    const error = (await service.erase(ID, 'a reason', actor()).catch((e: unknown) => e)) as Error;
    expect(error.message).not.toContain(ID);
    expect(audit.events[0]).toMatchObject({ outcome: 'failed', admin: { action: 'subject.erase' } });
    expect(JSON.stringify(audit.events)).not.toContain(ID);
  });
});
