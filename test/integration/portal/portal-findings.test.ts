// The Pipelines page's unmapped findings in a real browser: Debian's chromium, headless, against a
// real veil service whose pipeline lists a fake processor's /metrics (Prometheus text with
// findings, hostile label values included); an editor turns the findings into a draft.
import type { Browser, Page } from 'playwright-core';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, screenshots, watchedPage, signInAs } from '../../helpers/browser.ts';
import type { TestService } from '../../helpers/http-service.ts';
import { startPortalService } from '../../helpers/portal-client.ts';
import { pipelineYaml } from '../../helpers/pipeline-yaml.ts';
import { serveMetrics, type ServedMetrics } from '../../helpers/prometheus.ts';

const M = 'veil_stream_unmapped_findings_total';
const SCRIPT_PATH = '<script>window.__veilXss = 1; alert(1)</script>';
const QUOTE_PATH = `x" onmouseover="window.__veilXss = 2" data-x='y`;
const IMG_KIND = '<img src=x onerror="window.__veilXss = 3">';
/** a Prometheus label value: backslash, double quote and newline escaped */
const label = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

let t: TestService;
let browser: Browser;
let page: Page;
let processor: ServedMetrics;
const dialogs: string[] = [];
const consoleErrors: string[] = [];

beforeAll(async () => {
  const metrics = [
    `# HELP ${M} Records dead-lettered by the unmapped guard`,
    `# TYPE ${M} counter`,
    `${M}{pipeline="customers",path="contact.email",kind="email"} 12`,
    `${M}{pipeline="customers",path="profile.contacts[].phone",kind="phone"} 5`,
    `${M}{pipeline="customers",path="holder.iban",kind="iban"} 2`,
    `${M}{pipeline="customers",path="byEmail.*",kind="email"} 4`,
    `${M}{pipeline="customers",path="(other)",kind="payment-card"} 3`,
    `${M}{pipeline="customers",path="card",kind="tag:PII"} 6`,
    `${M}{pipeline="customers",path="${label(SCRIPT_PATH)}",kind="email"} 7`,
    `${M}{pipeline="customers",path="${label(QUOTE_PATH)}",kind="${label(IMG_KIND)}"} 1`,
    `${M}{pipeline="customers",path="EMAIL",kind="email"} 1`,
    // the pipeline moved to report mode since: what it passed in clear is counted apart
    `veil_stream_unmapped_reported_total{pipeline="customers",path="contact.email",kind="email"} 30`,
    'veil_stream_records_in_total{pipeline="customers"} 1000',
    'veil_stream_records_dead_lettered_total{pipeline="customers",code="UNMAPPED_PERSONAL_DATA"} 41',
    '',
  ].join('\n');
  processor = await serveMetrics(() => metrics);
  t = await startPortalService({ extra: `pipelines:\n${pipelineYaml('customers', `    metricsUrls: ['${processor.url}']\n    unmapped: report\n`)}` });
  await t.service.pipelineMetrics.scrape();
  browser = await launchChromium();
  ({ page } = await watchedPage(browser, { consoleErrors, dialogs }));
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await processor?.close();
});

describe('Pipelines page: unmapped findings in Chromium', () => {
  it('an editor sees the findings as text, with what a draft does with each, within the CSP', async () => {
    await signInAs(page, t.url, 'editor');
    await page.getByRole('link', { name: 'Pipelines' }).click();
    const table = page.getByRole('table', { name: 'Personal data at paths the mapping does not name' });
    await table.waitFor();
    const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent?.trim())));
    expect(rows).toEqual([
      ['contact.email', 'email', '12', '30', 'mapped as Customer.email'],
      [SCRIPT_PATH, 'email', '7', '0', 'not a pipeline path'],
      ['card', 'tag:PII', '6', '0', 'a field the schema tags: map the tag under tags, not the path'],
      ['profile.contacts[].phone', 'phone', '5', '0', 'mapped as Customer.phone'],
      ['byEmail.*', 'email', '4', '0', 'the data sits in an object key: no path can name it'],
      ['(other)', 'payment-card', '3', '0', 'paths beyond the 100 a processor names: its log names each one'],
      ['holder.iban', 'iban', '2', '0', 'mapped as Customer.iban'],
      ['EMAIL', 'email', '1', '0', 'mapped in the active version'],
      [QUOTE_PATH, IMG_KIND, '1', '0', 'not a pipeline path'],
    ]);
    // report mode says plainly that it protects nothing
    expect(await page.locator('p.warning').filter({ hasText: 'Report mode' }).textContent()).toContain('protects nothing');
    // the hostile labels are text: no element, attribute or script came from them
    expect(await page.locator('tbody script, tbody img, [onmouseover], [data-x]').count()).toBe(0);
    await page.getByText(SCRIPT_PATH).hover();
    await page.getByText(QUOTE_PATH).hover();
    expect(await page.evaluate('typeof window.__veilXss')).toBe('undefined');
    expect(dialogs).toEqual([]);
    // the notes on *, (other) and tags
    const notes = await page.locator('ul.notes').textContent();
    expect(notes).toContain('* in a path: the data sits in an object key');
    expect(notes).toContain('(other): paths beyond the 100 per pipeline');
    expect(notes).toContain('map the tag (tags: { TAG: Class.property })');
    // the CSP allows no inline script, and the page has none
    expect(await page.$$eval('script', (list) => list.every((s) => s.getAttribute('src') && !s.textContent))).toBe(true);
    expect(consoleErrors.filter((m) => /Content Security Policy/i.test(m))).toEqual([]);
    await screenshots(page, 'pipelines-findings');
  });

  it('"Create a draft mapping these paths" lands on a valid draft whose YAML maps the new paths', async () => {
    const before = await t.service.versions.drafts();
    await page.getByRole('button', { name: 'Create a draft mapping these paths' }).click();
    await page.getByRole('heading', { name: /^Draft / }).waitFor();
    expect(page.url()).toMatch(/\/admin\/drafts\/[0-9a-f-]{36}\?done=mapped$/);
    expect(await page.getByRole('status').textContent()).toContain('Draft created: the pipeline maps the paths the unmapped guard found.');
    expect(await page.locator('.ok').first().textContent()).toContain('Valid');
    const yaml = await page.locator('#draft-yaml').inputValue();
    const doc = parse(yaml);
    expect(doc.pipelines.customers.fields).toEqual([
      { path: 'email', field: 'Customer.email' },
      { path: 'contact.email', field: 'Customer.email' },
      { path: 'profile.contacts[].phone', field: 'Customer.phone' },
      { path: 'holder.iban', field: 'Customer.iban' },
    ]);
    expect(yaml).toContain('# unmapped guard: phone, 5 records dead-lettered');
    expect(doc.classes.Customer.properties.phone.protect).toBe('phone-fpe');
    expect(doc.classes.Customer.properties.iban.protect).toBe('id-fpe');
    for (const hostile of [SCRIPT_PATH, QUOTE_PATH, IMG_KIND, 'byEmail', '(other)', 'tag:PII']) expect(yaml).not.toContain(hostile);
    expect(await t.service.versions.drafts()).toHaveLength(before.length + 1);
    // the draft page keeps the CSP rules too
    expect(await page.$$eval('script', (list) => list.every((s) => s.getAttribute('src') && !s.textContent))).toBe(true);
    expect(consoleErrors.filter((m) => /Content Security Policy/i.test(m))).toEqual([]);
    expect(dialogs).toEqual([]);
    expect(t.audit.events.some((e) => e.admin?.action === 'draft.unmapped' && e.outcome === 'ok' && e.subject === 'editor')).toBe(true);
    // the active version is unchanged: the draft goes through review and publish
    expect(t.service.holder.get().config.pipelines.customers!.fields).toEqual([{ path: 'email', field: 'Customer.email' }]);
  });

  it('a form tampered with in the page (a path with *, an unknown kind) is refused and creates no draft', async () => {
    await page.goto(`${t.url}/admin/pipelines`);
    const before = (await t.service.versions.drafts()).length;
    for (const forged of ['byEmail.*\temail\t4', 'contact.email\tsecret-kind\t1', `${SCRIPT_PATH}\temail\t7`]) {
      await page.evaluate(`document.querySelector('form[action="/admin/pipelines/draft"] input[name="finding"]').value = ${JSON.stringify(forged)}`);
      await page.getByRole('button', { name: 'Create a draft mapping these paths' }).click();
      await page.getByText('REQUEST_MALFORMED').waitFor();
      await page.goBack();
    }
    expect(await t.service.versions.drafts()).toHaveLength(before);
    expect(await page.evaluate('typeof window.__veilXss')).toBe('undefined');
  });
});
