import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/http-service.ts';
import { signIn, startPortalService, type PortalClient } from '../helpers/portal-client.ts';
import { body } from '../helpers/engine-fixture.ts';

let t: TestService;
let admin: PortalClient;

beforeEach(async () => {
  t = await startPortalService();
  admin = await signIn(t.url, 'veil-dev', t.service.devClient!.secret);
});
afterEach(async () => t?.close());

async function newDraft(text?: string): Promise<string> {
  const res = await admin.post('/admin/drafts', text === undefined ? { from: 'v1' } : { yaml: text });
  return /\/admin\/drafts\/([0-9a-f-]{36})/.exec(res.location!)![1]!;
}

const unprotectEmail = async (protectedEmail: string) =>
  fetch(`${t.url}/transform`, {
    method: 'POST',
    headers: { authorization: `Bearer ${await t.token()}`, 'content-type': 'application/json' },
    body: JSON.stringify(body({ roles: ['fraud'], action: 'Unprotect', instances: [['email', protectedEmail]] })),
  });

describe('publishing', () => {
  it('activates the version for /transform without a restart; a call in flight finishes on the engine it started with', async () => {
    const token = await t.token();
    const protect = await fetch(`${t.url}/transform`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body({ roles: ['fraud'], action: 'Protect', instances: [['email', 'ada@example.org']] })),
    });
    const protectedEmail = ((await protect.json()) as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances[0]!.value;

    // the new version takes Unprotect away from fraud
    const id = await newDraft();
    const text = (await t.service.versions.draftText(id)).replace(
      "      - { actions: [Protect, Unprotect], fields: ['Customer.*'] }",
      "      - { actions: [Protect], fields: ['Customer.*'] }",
    );
    expect((await admin.post(`/admin/drafts/${id}/yaml`, { yaml: text })).status).toBe(303);

    // hold an unprotect inside the service (at its audit record, after it read the engine)
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const record = t.audit.record.bind(t.audit);
    t.audit.record = async (event) => {
      if (event.channel === 'http') {
        entered();
        await gate;
      }
      return record(event);
    };
    const inFlight = unprotectEmail(protectedEmail);
    await inside;
    const published = await admin.publish(id);
    expect(published.status).toBe(303);
    expect(published.location).toBe('/admin/diff?from=v1&to=v2&done=published');
    expect(t.service.holder.get().version).toBe(2);
    release();
    expect((await inFlight).status).toBe(200);
    t.audit.record = record;
    // a call that starts after the publish gets the new version
    expect((await unprotectEmail(protectedEmail)).status).toBe(403);
  });

  it('refuses to publish an invalid draft or one whose saved test case fails (409 PUBLISH_REFUSED), leaving the active version', async () => {
    const invalid = await newDraft();
    await admin.post(`/admin/drafts/${invalid}/fields`, { 'f:/sequences/card-fpe/steps/0/keepFirst': '99' });
    const refused = await admin.publish(invalid);
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('PUBLISH_REFUSED');
    expect(refused.text).toContain('/sequences/card-fpe/steps/0/keepFirst');

    const failing = await newDraft();
    await admin.post(`/admin/drafts/${failing}/tests`, {
      name: 'support reads cards',
      field: 'Customer.cardNumber',
      role: 'support',
      action: 'Unprotect',
      value: '4111-1111-1111-1111',
      expect: 'round-trip',
    });
    const draftPage = await admin.get(`/admin/drafts/${failing}`);
    expect(draftPage.text).toContain('fail: got denied');
    const refusedTests = await admin.publish(failing);
    expect(refusedTests.status).toBe(409);
    expect(refusedTests.text).toContain('saved test cases fail');
    expect(t.service.holder.get().version).toBe(1);
    expect(t.audit.events.filter((e) => e.admin?.action === 'publish').map((e) => e.outcome)).toEqual(['failed', 'failed']);
  });

  it('reverts by publishing the old content as a new version', async () => {
    const id = await newDraft();
    await admin.post(`/admin/drafts/${id}/fields`, { 'f:/sequences/card-mask/steps/0/char': '#' });
    await admin.publish(id);
    const reverted = await admin.post('/admin/versions/1/revert', {});
    expect(reverted.location).toBe('/admin/diff?from=v2&to=v3&done=reverted');
    expect(await t.service.versions.read(3)).toBe(await t.service.versions.read(1));
    expect(t.service.holder.get().version).toBe(3);
  });

  it('never stores or logs a tested value', async () => {
    const value = 'zz-tested-9931@example.org';
    const res = await admin.post('/admin/tester', {
      source: 'v1',
      className: 'Customer',
      role: 'fraud',
      action: 'Unprotect',
      keys: 'live',
      'value:email': value,
    });
    expect(res.status).toBe(200);
    expect(res.text).toContain('returned the input');
    expect(t.logs.join('')).not.toContain(value);
    expect(JSON.stringify(t.audit.events)).not.toContain(value);
    const { readdir, readFile } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const walk = async (dir: string): Promise<string[]> =>
      (await Promise.all((await readdir(dir, { withFileTypes: true })).map((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)])))).flat();
    for (const file of await walk(t.dataDir)) expect(await readFile(file, 'latin1'), file).not.toContain(value);
  });

  it('runs live keys only on the active version and only for roles the admin holds', async () => {
    const tester = await signIn(t.url, 'tester');
    const notHeld = await tester.post('/admin/tester', {
      source: 'v1',
      className: 'Customer',
      role: 'fraud',
      action: 'Unprotect',
      keys: 'live',
      'value:email': 'a@example.org',
    });
    expect(notHeld.text).toContain('ROLE_NOT_HELD');
    const id = await newDraft();
    const draft = await tester.post('/admin/tester', {
      source: `draft:${id}`,
      className: 'Customer',
      role: 'support',
      action: 'Unprotect',
      keys: 'live',
      'value:email': 'a@example.org',
    });
    expect(draft.text).toContain('Live keys run only on the active version');
    // the same role simulated on sandbox keys: any role, nothing audited
    const sandbox = await tester.post('/admin/tester', {
      source: 'v1',
      className: 'Customer',
      role: 'fraud',
      action: 'Unprotect',
      keys: 'sandbox',
      'value:email': 'a@example.org',
    });
    expect(sandbox.text).toContain('returned the input');
  });
});
