// Attack: an admin-editor changes a draft after the publisher reviewed it, and the publisher's
// click publishes the changed text. Against `veil serve` as a process, the publisher in Chromium.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashClientSecret } from '../../../src/identity/client-secret.ts';
import { launchChromium, signInAs } from '../../helpers/browser.ts';
import { body } from '../../helpers/engine-fixture.ts';
import { portalConfigText, reviewedHash } from '../../helpers/portal-client.ts';
import { draftIdOf, portalSession, startVeilServe, type PortalSession, type VeilProcess } from '../../helpers/veil-process.ts';

let veil: VeilProcess;
let browser: Browser;
let editor: PortalSession;
const NARROW = '      - { actions: [Protect, Unprotect], fields: [Customer.email] }';
const WIDE = "      - { actions: [Protect, Unprotect], fields: ['Customer.*'] }";

const active = async () => (JSON.parse(await readFile(join(veil.dataDir, 'config-versions', 'index.json'), 'utf8')) as { active: number }).active;

async function token(clientId: string, secret: string): Promise<string> {
  const res = await veil.request('/connect/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }).toString(),
  });
  return (JSON.parse(res.text) as { access_token: string }).access_token;
}

/** What role support gets when it unprotects a card number: 403 before the widening, 200 after. */
async function supportReadsCard(): Promise<number> {
  const devSecret = (await readFile(join(veil.dataDir, 'dev-client.secret'), 'utf8')).trim();
  const call = async (t: string, roles: string[], action: string, value: string) =>
    veil.request('/transform', {
      method: 'POST',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
      body: JSON.stringify(body({ roles, action, instances: [['cardNumber', value]] })),
    });
  const protectedCard = (
    JSON.parse((await call(await token('veil-dev', devSecret), ['fraud'], 'Protect', '4111-1111-1111-1111')).text) as {
      responses: { instances: { value: string }[] }[];
    }
  ).responses[0]!.instances[0]!.value;
  return (await call(await token('tester', 'tester-secret'), ['support'], 'Unprotect', protectedCard)).status;
}

async function signInBrowser(clientId: string): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(10_000);
  await signInAs(page, veil.url, clientId);
  return page;
}

/** The editor replaces the draft's text (as the YAML pane would send it: secret hashes hidden). */
async function editorSaves(id: string, change: (text: string) => string): Promise<void> {
  const shown = (await editor.get(`/admin/drafts/${id}/export`)).text;
  const res = await editor.post(`/admin/drafts/${id}/yaml`, { yaml: change(shown) });
  expect(res.status).toBe(303);
}

beforeAll(async () => {
  const both = await hashClientSecret('both-secret', { N: 1024, r: 8, p: 1 });
  veil = await startVeilServe({
    configText: await portalConfigText(`    both: { secretHash: '${both}', roles: [admin-editor, admin-publisher] }\nportal:\n  fourEyes: true\n`),
  });
  browser = await launchChromium();
  editor = await portalSession(veil, 'editor');
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await veil?.stop();
});

describe('publish is bound to the text the publisher reviewed', () => {
  it('refuses (409 DRAFT_CHANGED) a publish whose draft the editor widened after the review; nothing is published', async () => {
    const id = draftIdOf(await editor.post('/admin/drafts', { from: 'v1' }))!;
    await editorSaves(id, (t) => t.replace("char: '*'", "char: '#'"));
    expect(await supportReadsCard()).toBe(403);

    const publisher = await signInBrowser('publisher');
    await publisher.goto(`${veil.url}/admin/drafts/${id}`);
    expect(await publisher.locator('#draft-yaml').inputValue()).toContain(NARROW);
    // after the review, the editor widens support's grant to every Customer field
    await editorSaves(id, (t) => t.replace(NARROW, WIDE));

    const answer = publisher.waitForResponse((r) => r.url().endsWith(`/admin/drafts/${id}/publish`));
    await publisher.getByRole('button', { name: 'Publish this draft' }).click();
    expect((await answer).status()).toBe(409);
    await publisher.getByText('DRAFT_CHANGED').waitFor();
    expect(await active()).toBe(1);
    expect(await supportReadsCard()).toBe(403);

    // reviewed again (the page now shows the wide grant), the click publishes what was shown
    await publisher.goto(`${veil.url}/admin/drafts/${id}`);
    expect(await publisher.locator('#draft-yaml').inputValue()).toContain(WIDE);
    await publisher.getByRole('button', { name: 'Publish this draft' }).click();
    await publisher.getByText('Published: the new version is active').waitFor();
    expect(await active()).toBe(2);
    expect(await supportReadsCard()).toBe(200);
    await publisher.context().close();
  });

  it('refuses a publish form without the reviewed hash, or with the hash of another text', async () => {
    const id = draftIdOf(await editor.post('/admin/drafts', { from: 'v2' }))!;
    const publisher = await portalSession(veil, 'publisher');
    const reviewed = reviewedHash((await publisher.get(`/admin/drafts/${id}`)).text)!;
    for (const form of [
      {} as Record<string, string>,
      { reviewed: '' },
      { reviewed: reviewed.toUpperCase() },
      { reviewed: `${reviewed}0` },
      { reviewed: 'a'.repeat(64) },
    ]) {
      const res = await publisher.post(`/admin/drafts/${id}/publish`, form);
      expect(res.status).toBe(409);
      expect(res.text).toContain('DRAFT_CHANGED');
    }
    expect(await active()).toBe(2);
    const audit = (await readFile(join(veil.dataDir, 'audit.log'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { admin?: { action: string }; outcome: string });
    expect(audit.filter((e) => e.admin?.action === 'publish' && e.outcome === 'failed').length).toBeGreaterThanOrEqual(6);
    expect((await publisher.post(`/admin/drafts/${id}/publish`, { reviewed })).status).toBe(303);
    expect(await active()).toBe(3);
  });

  it('with portal.fourEyes, an admin who edited a draft cannot publish it (403 FOUR_EYES_REQUIRED); another publisher can', async () => {
    const both = await portalSession(veil, 'both');
    const id = draftIdOf(await both.post('/admin/drafts', { from: 'v3' }))!;
    const shown = (await both.get(`/admin/drafts/${id}/export`)).text;
    expect((await both.post(`/admin/drafts/${id}/yaml`, { yaml: shown.replace(WIDE, NARROW) })).status).toBe(303);
    const page = (await both.get(`/admin/drafts/${id}`)).text;
    expect(reviewedHash(page)).toBeUndefined();
    expect(page).toContain('Four eyes: you edited this draft');
    // the right hash (as another publisher's page carries it) does not help the editor
    const publisher = await portalSession(veil, 'publisher');
    const hash = reviewedHash((await publisher.get(`/admin/drafts/${id}`)).text)!;
    const refused = await both.post(`/admin/drafts/${id}/publish`, { reviewed: hash });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('FOUR_EYES_REQUIRED');
    expect(await active()).toBe(3);

    expect((await publisher.post(`/admin/drafts/${id}/publish`, { reviewed: hash })).status).toBe(303);
    expect(await active()).toBe(4);
    expect(await supportReadsCard()).toBe(403);
  });
});
