// The Subjects page (/admin/subjects) in Chromium against a real service, and its forms over HTTP:
// look-up for any admin, erasure with a reason and a confirmation for a publisher, the receipt shown,
// and the subject id in no URL, page, log line or audit record.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyReceipt } from '../../src/subjects/index.ts';
import { launchChromium, screenshots, signInAs } from '../helpers/browser.ts';
import type { TestService } from '../helpers/http-service.ts';
import { signIn, startPortalService } from '../helpers/portal-client.ts';

const ID = 'petra.portal-subject@example.org';
const OTHER = 'quentin.portal-other@example.org';
let t: TestService;
let browser: Browser;
const pages: string[] = [];

beforeAll(async () => {
  t = await startPortalService();
  await t.service.subjects.keyFor(ID);
  await t.service.subjects.keyFor(OTHER);
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

async function signedIn(clientId: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  await signInAs(page, t.url, clientId);
  await page.getByRole('link', { name: 'Subjects' }).click();
  await page.getByRole('heading', { name: 'Subjects', exact: true }).waitFor();
  return page;
}

describe('the Subjects page in Chromium', () => {
  it('a publisher looks a subject up, then erases it with a reason and a confirmation, and gets the receipt', async () => {
    const page = await signedIn('publisher');
    await screenshots(page, 'subjects');
    const lookUp = page.getByRole('form', { name: 'Look up a subject' });
    await lookUp.getByLabel('Subject id').fill(ID);
    await lookUp.getByRole('button', { name: 'Look up' }).click();
    await page.getByRole('heading', { name: 'Status: exists' }).waitFor();
    expect(await page.getByRole('status').textContent()).toMatch(/reference [0-9a-f]{32} has a key: generation 1/);
    expect(new URL(page.url()).pathname).toBe('/admin/subjects');
    pages.push(await page.content());

    const erase = page.getByRole('form', { name: 'Erase a subject' });
    await erase.getByLabel('Subject id').fill(ID);
    await erase.getByLabel('Reason').fill('Art. 17 request 2026-11');
    // the confirmation is required: without it the browser does not send the form
    await erase.getByRole('button', { name: 'Erase subject' }).click();
    expect(await page.getByRole('heading', { name: 'Status: exists' }).count()).toBe(1);
    expect((await t.service.subjects.status(ID)).state).toBe('exists');
    await erase.getByLabel('I understand that this cannot be undone').check();
    await erase.getByRole('button', { name: 'Erase subject' }).click();
    await page.getByRole('heading', { name: 'Erased', exact: true }).waitFor();
    const receipt = (await page.locator('#receipt').textContent())!.trim();
    const claims = await verifyReceipt(receipt, t.service.keystore, { issuer: t.service.issuer });
    expect(claims).toMatchObject({ by: 'publisher', reason: 'Art. 17 request 2026-11', generation: 1, alreadyErased: false });
    expect(await page.getByRole('status').textContent()).toContain(claims.sub);
    expect((await t.service.subjects.status(ID)).state).toBe('erased');
    expect(new URL(page.url()).pathname).toBe('/admin/subjects');
    // nothing the admin typed comes back into the forms
    expect(await page.getByRole('form', { name: 'Erase a subject' }).getByLabel('Subject id').inputValue()).toBe('');
    pages.push(await page.content());
    await screenshots(page, 'subjects-erased');
    expect(t.audit.events.find((e) => e.admin?.action === 'subject.erase' && e.outcome === 'ok')).toMatchObject({
      channel: 'portal',
      client: 'publisher',
      erasure: { subject: claims.sub, receipt: claims.jti, generation: 1 },
    });
    await page.context().close();
  });

  it('a refused erasure shows its code on the page, not the id', async () => {
    const page = await signedIn('publisher');
    const erase = page.getByRole('form', { name: 'Erase a subject' });
    await erase.getByLabel('Subject id').fill(OTHER);
    await erase.getByLabel('Reason').fill(`forget ${OTHER}`);
    await erase.getByLabel('I understand that this cannot be undone').check();
    await erase.getByRole('button', { name: 'Erase subject' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('ERASURE_REQUEST_INVALID');
    expect((await t.service.subjects.status(OTHER)).state).toBe('exists');
    pages.push(await page.content());
    await page.context().close();
  });

  it('a viewer looks up but is offered no erasure', async () => {
    const page = await signedIn('viewer');
    expect(await page.getByRole('form', { name: 'Erase a subject' }).count()).toBe(0);
    expect(await page.getByText('Erasing needs the publisher right').count()).toBe(1);
    const lookUp = page.getByRole('form', { name: 'Look up a subject' });
    await lookUp.getByLabel('Subject id').fill(ID);
    await lookUp.getByRole('button', { name: 'Look up' }).click();
    await page.getByRole('heading', { name: 'Status: erased' }).waitFor();
    pages.push(await page.content());
    await page.context().close();
  });
});

describe('the Subjects page over HTTP', () => {
  it('a viewer posting an erasure: 403 ADMIN_ROLE_MISSING, recorded, nothing erased', async () => {
    const viewer = await signIn(t.url, 'viewer');
    const res = await viewer.post('/admin/subjects', { op: 'erase', subject: OTHER, reason: 'r', confirm: 'yes' });
    expect(res.status).toBe(403);
    expect(res.text).toContain('ADMIN_ROLE_MISSING');
    expect((await t.service.subjects.status(OTHER)).state).toBe('exists');
    expect(t.audit.events.at(-1)).toMatchObject({
      channel: 'portal',
      client: 'viewer',
      outcome: 'denied',
      code: 'ADMIN_ROLE_MISSING',
      admin: { action: 'subject.erase' },
    });
    pages.push(res.text);
  });

  it('an erasure without the confirmation (400) or without the CSRF token (403) erases nothing', async () => {
    const publisher = await signIn(t.url, 'publisher');
    const unconfirmed = await publisher.post('/admin/subjects', { op: 'erase', subject: OTHER, reason: 'r' });
    expect(unconfirmed.status).toBe(400);
    expect(unconfirmed.text).toContain('confirm the erasure');
    const forged = await publisher.post('/admin/subjects', { op: 'erase', subject: OTHER, reason: 'r', confirm: 'yes' }, { csrf: false });
    expect(forged.status).toBe(403);
    expect(forged.text).toContain('CSRF_TOKEN_INVALID');
    expect((await t.service.subjects.status(OTHER)).state).toBe('exists');
    const bad = await publisher.post('/admin/subjects', { op: 'status', subject: 'x\u0000y' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('SUBJECT_ID_INVALID');
    pages.push(unconfirmed.text, forged.text, bad.text);
  });

  it('the ids never appeared in a page, a log line or an audit record', () => {
    expect(pages.length).toBeGreaterThan(5);
    for (const [what, texts] of [
      ['pages', pages],
      ['log lines', t.logs],
      ['audit records', t.audit.events.map((e) => JSON.stringify(e))],
    ] as const) {
      expect(
        texts.filter((text) => text.includes(ID) || text.includes(OTHER)),
        what,
      ).toEqual([]);
    }
  });
});
