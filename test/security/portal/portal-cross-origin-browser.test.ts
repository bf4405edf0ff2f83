// Attack (issue 43): a page of another origin on the same site — another port of the portal's host,
// whose requests carry the SameSite=Strict session cookie — submits the portal's erase form with a
// CSRF token it learned. Chromium sends `Origin` and `Sec-Fetch-Site: same-site`; the portal must
// refuse (403 CROSS_ORIGIN_REFUSED) and erase nothing, while its own page still erases.
import { createServer, type Server } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, screenshots, signInAs } from '../../helpers/browser.ts';
import type { TestService } from '../../helpers/http-service.ts';
import { startPortalService } from '../../helpers/portal-client.ts';

const VICTIM = 'vera.cross-origin@example.org';
const OTHER = 'otto.same-origin@example.org';
let t: TestService;
let browser: Browser;
let page: Page;
let evil: Server;
let evilUrl: string;
/** what the evil page's form sends: the token is filled in once the admin's page showed it */
const forged: Record<string, string> = { op: 'erase', subject: VICTIM, reason: 'forged', confirm: 'yes' };

beforeAll(async () => {
  t = await startPortalService();
  await t.service.subjects.keyFor(VICTIM);
  await t.service.subjects.keyFor(OTHER);
  evil = createServer((_req, res) => {
    const inputs = Object.entries(forged)
      .map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`)
      .join('');
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>win a prize</title>
<form method="post" action="${t.url}/admin/subjects">${inputs}<button type="submit">Claim</button></form>`);
  });
  await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
  // same host, another port: same site (the cookie goes along), another origin
  evilUrl = `http://127.0.0.1:${(evil.address() as { port: number }).port}/`;
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(10_000);
  page = await context.newPage();
  await signInAs(page, t.url, 'publisher');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => evil?.close(r));
  await t?.close();
});

/** Submits a form of the current page by its button: the portal's answer, and the headers Chromium sent with it. */
async function submit(button: string): Promise<{ status: number; origin?: string; site?: string }> {
  const answer = page.waitForResponse((r) => r.url() === `${t.url}/admin/subjects` && r.request().method() === 'POST');
  await page.getByRole('button', { name: button }).click();
  const res = await answer;
  const headers = await res.request().allHeaders();
  return { status: res.status(), origin: headers.origin, site: headers['sec-fetch-site'] };
}

describe("the portal's state-changing POSTs in Chromium, from another origin", () => {
  it('a same-site page of another origin submitting the erase form with a valid token: 403 CROSS_ORIGIN_REFUSED, nothing erased', async () => {
    await page.getByRole('link', { name: 'Subjects' }).click();
    // the token leaked (the premise of the attack): the evil form carries the real one
    forged._csrf = (await page.locator('input[name="_csrf"]').first().getAttribute('value'))!;
    await page.goto(evilUrl);
    // Chromium said where the form came from, and sent the session cookie (a 403, not a 303 to sign-in)
    expect(await submit('Claim')).toEqual({ status: 403, origin: evilUrl.slice(0, -1), site: 'same-site' });
    await page.getByText('CROSS_ORIGIN_REFUSED').first().waitFor();
    await screenshots(page, 'cross-origin-refused');
    expect((await t.service.subjects.status(VICTIM)).state).toBe('exists');
    expect(t.audit.events.some((e) => e.admin?.action === 'subject.erase' && e.outcome === 'ok')).toBe(false);
  });

  it("the portal's own Subjects page still erases (same origin)", async () => {
    await page.goto(`${t.url}/admin/subjects`);
    const erase = page.getByRole('form', { name: 'Erase a subject' });
    await erase.getByLabel('Subject id').fill(OTHER);
    await erase.getByLabel('Reason').fill('Art. 17 request 43');
    await erase.getByLabel('I understand that this cannot be undone').check();
    expect(await submit('Erase subject')).toEqual({ status: 200, origin: t.url, site: 'same-origin' });
    await page.getByRole('heading', { name: 'Erased', exact: true }).waitFor();
    expect((await t.service.subjects.status(OTHER)).state).toBe('erased');
    expect((await t.service.subjects.status(VICTIM)).state).toBe('exists');
  });
});
