// The admin portal in a real browser: Debian's chromium, headless, against a real veil service.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idOf } from '../../../src/portal/html.ts';
import { launchChromium, screenshots, watchedPage } from '../../helpers/browser.ts';
import { pipelineYaml } from '../../helpers/pipeline-yaml.ts';
import type { TestService } from '../../helpers/http-service.ts';
import { startPortalService } from '../../helpers/portal-client.ts';
import { serveMetrics, type ServedMetrics } from '../../helpers/prometheus.ts';
import { StreamMetrics } from '../../../src/stream/protect/index.ts';

let t: TestService;
let browser: Browser;
let page: Page;
let draft = '';
const dialogs: string[] = [];
const consoleErrors: string[] = [];
// a processor's /metrics (what `veil stream protect` serves), for the Pipelines page
const processorMetrics = new StreamMetrics();
let processor: ServedMetrics;

async function signIn(p: Page, clientId: string, secret: string): Promise<void> {
  await p.goto(`${t.url}/admin`);
  await expect.poll(() => p.url()).toContain('/admin/sign-in');
  await p.getByLabel('Client id').fill(clientId);
  await p.getByLabel('Client secret').fill(secret);
  await p.getByRole('button', { name: 'Sign in', exact: true }).click();
  await p.getByRole('heading', { name: 'Overview' }).waitFor();
}

const field = (pointer: string) => page.locator(`#${idOf('f', pointer)}`);

beforeAll(async () => {
  processor = await serveMetrics(() => processorMetrics.registry.metrics(), processorMetrics.registry.contentType);
  t = await startPortalService({
    extra: `pipelines:\n${pipelineYaml('customers', `    metricsUrls: ['${processor.url}']\n`)}`,
  });
  browser = await launchChromium();
  ({ page } = await watchedPage(browser, { consoleErrors, dialogs }));
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await processor?.close();
});

describe('admin portal in Chromium', () => {
  it('signs in with the development client and shows the overview', async () => {
    await page.goto(`${t.url}/admin`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await screenshots(page, 'sign-in');
    await signIn(page, 'veil-dev', t.service.devClient!.secret);
    await expect.poll(() => page.getByText('rights: viewer, editor, publisher, tester').count()).toBe(1);
    // the CSP allows no inline script, and the page has none
    expect(await page.$$eval('script', (list) => list.every((s) => s.getAttribute('src') && !s.textContent))).toBe(true);
    await screenshots(page, 'overview');
    expect(t.audit.events.some((e) => e.admin?.action === 'sign-in' && e.outcome === 'ok' && e.client === 'veil-dev')).toBe(true);
  });

  it('edits a sequence in a draft and shows the validation error next to the field', async () => {
    await page.getByRole('button', { name: 'New draft from version 1' }).click();
    await page.getByRole('heading', { name: /^Draft / }).waitFor();
    draft = /\/admin\/drafts\/([0-9a-f-]{36})/.exec(page.url())![1]!;
    await field('/sequences/card-mask/steps/0/keepLast').fill('99');
    await page.getByRole('button', { name: 'Save fields' }).click();
    const error = page.locator(`#${idOf('e', '/sequences/card-mask/steps/0/keepLast')}`);
    await expect.poll(() => error.textContent()).toContain('/sequences/card-mask/steps/0/keepLast');
    expect(await field('/sequences/card-mask/steps/0/keepLast').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByRole('alert').first().textContent()).toContain('cannot be published');
    await screenshots(page, 'draft-invalid');

    await field('/sequences/card-mask/steps/0/keepLast').fill('4');
    await field('/sequences/card-mask/steps/0/char').fill('#');
    await page.getByRole('button', { name: 'Save fields' }).click();
    await page.getByText('Draft saved.').waitFor();
    expect(await page.locator('#draft-yaml').inputValue()).toContain("char: '#'");
    await screenshots(page, 'draft');
  });

  it('runs the tester round trip on sandbox keys, with step outputs, format and determinism', async () => {
    await page.goto(`${t.url}/admin/tester?source=draft:${draft}`);
    await page.getByLabel('Rights context evidence: Role').selectOption('fraud');
    await page.getByLabel('Processing context evidence: Action (after Protect)').selectOption('Unprotect');
    await page.getByLabel('email').fill('ada@example.org');
    await page.getByLabel('cardNumber').fill('4111-1111-1111-1111');
    await page.getByLabel('name').fill('Ada Lovelace');
    await page.getByRole('button', { name: /^Run Protect/ }).click();
    const email = page.locator('tr[data-property="email"]');
    await email.waitFor();
    expect(await email.textContent()).toContain('returned the input');
    expect(await email.textContent()).toContain('deterministic');
    const card = await page.locator('tr[data-property="cardNumber"]').textContent();
    expect(card).toContain('returned the input');
    expect(card).toContain('length 19 and separators kept');
    expect(await page.locator('tr[data-property="name"]').textContent()).toContain('randomized');
    expect(await page.locator('#protect-request').textContent()).toContain('"rightsContexts"');
    expect(await page.locator('#read-curl').textContent()).toContain('/transform');
    await screenshots(page, 'tester');
    // sandbox calls are not audited: they reveal nothing stored anywhere
    expect(t.audit.events.some((e) => e.channel === 'portal' && e.fields.length)).toBe(false);
  });

  it('shows the denial for a role without Unprotect', async () => {
    await page.getByLabel('Rights context evidence: Role').selectOption('ingest');
    await page.getByLabel('email').fill('ada@example.org');
    await page.getByRole('button', { name: /^Run Protect/ }).click();
    await expect.poll(() => page.locator('tr[data-property="email"]').textContent()).toContain('ACTION_NOT_GRANTED');
    await screenshots(page, 'tester-denied');
  });

  it('runs on live keys for a role the admin holds, audited without values', async () => {
    await page.goto(`${t.url}/admin/tester`);
    await page.getByLabel('Rights context evidence: Role').selectOption('fraud');
    await page.getByLabel(/Live \(active version/).check();
    await page.getByLabel('email').fill('zz-live-7731@example.org');
    await page.getByRole('button', { name: /^Run Protect/ }).click();
    await expect.poll(() => page.locator('tr[data-property="email"]').textContent()).toContain('returned the input');
    const live = t.audit.events.filter((e) => e.channel === 'portal' && e.fields.some((f) => f.action === 'Unprotect'));
    expect(live).toHaveLength(1);
    expect(live[0]!.client).toBe('veil-dev');
    expect(JSON.stringify(t.audit.events)).not.toContain('zz-live-7731');
    expect(t.logs.join('')).not.toContain('zz-live-7731');
  });

  it('saves a test case, publishes the draft, shows the diff, and the running service uses it', async () => {
    await page.goto(`${t.url}/admin/drafts/${draft}`);
    await page.locator('#tc-name').fill('ingest cannot read email');
    await page.locator('#tc-field').fill('Customer.email');
    await page.locator('#tc-role').fill('ingest');
    await page.locator('#tc-value').fill('test@example.org');
    await page.locator('#tc-expect').selectOption('denied');
    await page.getByRole('button', { name: 'Add test case' }).click();
    await page.getByText('Test case saved.').waitFor();
    expect(await page.locator('#tests-title + p + .scroll').textContent()).toContain('pass');

    await page.getByRole('button', { name: 'Publish this draft' }).click();
    await page.getByText('Published: the new version is active').waitFor();
    expect(page.url()).toContain('/admin/diff?from=v1&to=v2');
    expect(await page.locator('.diff-add').allTextContents()).toContain("+       - { type: mask, keepLast: 4, char: '#', preserve: '- ' }");
    await screenshots(page, 'diff');

    // the HTTP service now masks with '#', without a restart
    const token = await t.token();
    const rights = '6f1c1d2e-0000-4000-8000-000000000001';
    const processing = '6f1c1d2e-0000-4000-8000-000000000002';
    const res = await fetch(`${t.url}/transform`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        rightsContexts: [{ guid: rights, evidences: [{ name: 'Role', value: 'support' }] }],
        processingContexts: [{ guid: processing, evidences: [{ name: 'Action', value: 'Mask' }] }],
        requests: [
          {
            guid: '6f1c1d2e-0000-4000-8000-000000000003',
            rightsContext: rights,
            processingContext: processing,
            instances: [{ className: 'Customer', propertyName: 'cardNumber', value: '4111-1111-1111-1111' }],
          },
        ],
      }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances[0]!.value).toBe('####-####-####-1111');
  });

  it('shows the publish and the live unprotect in the audit page', async () => {
    await page.goto(`${t.url}/admin/audit`);
    const table = await page.locator('table').textContent();
    expect(table).toContain('publish');
    expect(table).toMatch(/portal.*veil-dev.*Unprotect Customer\.email ×1/s);
    await screenshots(page, 'audit');
    for (const [path, name] of [
      ['/admin/versions', 'versions'],
      ['/admin/matrix', 'matrix'],
      ['/admin/keys', 'keys'],
      ['/admin/pipelines', 'pipelines'],
    ] as const) {
      await page.goto(`${t.url}${path}`);
      await screenshots(page, name);
    }
    expect(await page.locator('body').textContent()).toBeTruthy();
  });

  it('charts the pipeline processor metrics as images with text alternatives, within the CSP', async () => {
    processorMetrics.recordsIn.inc({ pipeline: 'customers' }, 40);
    processorMetrics.recordsOut.inc({ pipeline: 'customers' }, 38);
    await t.service.pipelineMetrics.scrape();
    processorMetrics.recordsIn.inc({ pipeline: 'customers' }, 60);
    processorMetrics.recordsOut.inc({ pipeline: 'customers' }, 60);
    processorMetrics.deadLettered.inc({ pipeline: 'customers', code: 'FIELD_INVALID' }, 2);
    processorMetrics.lag.set({ pipeline: 'customers', topic: 'raw.customers', partition: '0' }, 9);
    await t.service.pipelineMetrics.scrape();
    consoleErrors.length = 0;
    await page.goto(`${t.url}/admin/pipelines`);
    await page.getByRole('heading', { name: 'Processor metrics' }).waitFor();
    for (const name of ['records in', 'records out', 'dead-lettered']) {
      const chart = page.getByRole('img', { name: `customers: ${name}, records/s` });
      const box = await chart.boundingBox();
      expect(box && box.width > 50 && box.height > 10, name).toBe(true);
      expect(await chart.locator('polyline').count()).toBe(1);
    }
    await page.getByRole('img', { name: 'customers: lag, records' }).waitFor();
    // the numbers as text: the cells after the chart are the latest value and the total
    const cell = (row: string, n: number) =>
      page
        .getByRole('row', { name: new RegExp(`^${row}`) })
        .getByRole('cell')
        .nth(n)
        .textContent();
    expect(await cell('Records in', 2)).toBe('100');
    expect(await cell('Dead-lettered', 2)).toBe('2');
    expect(Number(await cell('Records in', 1))).toBeGreaterThan(0);
    expect(await cell('Lag', 1)).toBe('9');
    expect(await page.getByText('reachable, scraped at').count()).toBe(1);
    expect(consoleErrors.filter((m) => /Content Security Policy/i.test(m))).toEqual([]);
    await screenshots(page, 'pipelines-metrics');
  });

  it('does not let a viewer publish', async () => {
    await page.goto(`${t.url}/admin`);
    await page.getByRole('button', { name: /^New draft from version/ }).click();
    await page.getByRole('heading', { name: /^Draft / }).waitFor();
    const id = /\/admin\/drafts\/([0-9a-f-]{36})/.exec(page.url())![1]!;
    const viewer = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const vp = await viewer.newPage();
    await signIn(vp, 'viewer', 'viewer-secret');
    await vp.goto(`${t.url}/admin/drafts/${id}`);
    await vp.getByText('read only').waitFor();
    expect(await vp.getByRole('button', { name: 'Publish this draft' }).count()).toBe(0);
    const csrf = await vp.locator('input[name="_csrf"]').first().inputValue();
    const refused = await vp.request.post(`${t.url}/admin/drafts/${id}/publish`, { form: { _csrf: csrf }, maxRedirects: 0 });
    expect(refused.status()).toBe(403);
    expect(await refused.text()).toContain('ADMIN_ROLE_MISSING');
    expect(t.service.holder.get().version).toBe(2);
    await viewer.close();
  });

  it('refuses a POST without the CSRF token', async () => {
    await page.goto(`${t.url}/admin`);
    await page.evaluate(`document.querySelectorAll('form[action="/admin/drafts"] input[name="_csrf"]').forEach((i) => i.remove())`);
    await page.getByRole('button', { name: /^New draft from version/ }).click();
    await page.getByText('CSRF_TOKEN_INVALID').waitFor();
    const drafts = await t.service.versions.drafts();
    expect(drafts).toHaveLength(1);
  });

  it('shows a class name containing <script> as text', async () => {
    const drafts = await t.service.versions.drafts();
    await page.goto(`${t.url}/admin/drafts/${drafts[0]!.id}`);
    const yaml = await page.locator('#draft-yaml').inputValue();
    const evil = '<script>window.__veilXss = 1; alert(1)</script>';
    await page.locator('#draft-yaml').fill(yaml.replace('classes:\n', `classes:\n  "${evil}":\n    properties:\n      x: { protect: email-deterministic }\n`));
    await page.getByRole('button', { name: 'Save YAML' }).click();
    await page.getByRole('alert').first().waitFor();
    expect(await page.locator('legend', { hasText: evil }).count()).toBe(1);
    // in the error's pointer the slash is escaped as ~1 (RFC 6901)
    expect(await page.locator('.error').first().textContent()).toContain('/classes/<script>window.__veilXss = 1; alert(1)<~1script>');
    expect(await page.evaluate('typeof window.__veilXss')).toBe('undefined');
    expect(dialogs).toEqual([]);
    await screenshots(page, 'draft-script-name');
  });
  it('Discovery: finds the personal data of pasted records, shows paths and counts only, and turns the proposal into a valid draft', async () => {
    const people = [
      ['Alice Dupont', 'alice@example.com', '4111-1111-1111-1111'],
      ['Bob Martin', 'bob@example.org', '5500 0000 0000 0004'],
      ['Chloé Bernard', 'chloe@example.net', '6011 0009 9013 9424'],
    ];
    const records = Array.from({ length: 12 }, (_, i) => {
      const [name, email, card] = people[i % 3]!;
      return JSON.stringify({ id: `r-${i}`, email, cards: [{ number: card }], profile: { name, tier: 'gold' }, contact: { phone: '+44 20 7946 0958' } });
    });
    await page.goto(`${t.url}/admin`);
    await page.getByRole('link', { name: 'Discovery' }).click();
    await page.getByRole('heading', { name: 'Discovery' }).waitFor();
    await page.getByLabel(/^Sample records/).fill([...records, '{not json'].join('\n'));
    await page.getByLabel(/^Topic they come from/).fill('raw.customers');
    await page.getByRole('button', { name: 'Find personal data' }).click();
    await page.getByRole('table', { name: 'Fields found' }).waitFor();
    expect(await page.getByText('Profiled 12 record(s), 1 line(s) not JSON (skipped): 4 field(s) hold personal data.').count()).toBe(1);
    const rows = await page.locator('table tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent?.trim()).join(' ')));
    expect(rows).toEqual([
      'cards[].number payment-card 12 of 12 100.0% high',
      'contact.phone phone 12 of 12 100.0% high',
      'email email 12 of 12 100.0% high',
      'profile.name person-name 12 of 12 100.0% medium',
    ]);
    // the page shows no sampled value, and its textarea comes back empty
    const content = await page.content();
    for (const v of people.flat()) expect(content).not.toContain(v);
    expect(await page.getByLabel(/^Sample records/).inputValue()).toBe('');
    await screenshots(page, 'discovery');
    await page.getByRole('button', { name: 'Create a draft from this proposal' }).click();
    await page.getByRole('heading', { name: /^Draft / }).waitFor();
    expect(await page.locator('.ok').first().textContent()).toContain('Valid');
    const yaml = await page.locator('#draft-yaml').inputValue();
    // merged into the active version: its pipeline is kept, the proposal's added beside it
    expect(yaml).toContain('customers-discovered:');
    expect(yaml).toContain('path: contact.phone');
    for (const v of people.flat()) expect(yaml).not.toContain(v);
    expect(t.audit.events.some((e) => e.admin?.action === 'draft.discover' && e.outcome === 'ok')).toBe(true);
    expect(JSON.stringify(t.audit.events)).not.toContain('alice@example.com');
  });

  it('Discovery refuses a forged proposal (an unknown kind, a path with markup) and creates no draft', async () => {
    await page.goto(`${t.url}/admin/discover`);
    const csrf = await page.locator('input[name="_csrf"]').first().inputValue();
    const before = (await t.service.versions.drafts()).length;
    for (const finding of ['email\tsecret-kind\t1\t1', '<script>x</script>\temail\t1\t1', 'email\temail\t5\t1']) {
      const refused = await page.request.post(`${t.url}/admin/discover/draft`, { form: { _csrf: csrf, finding }, maxRedirects: 0 });
      expect(refused.status(), finding).toBe(400);
      expect(await refused.text()).toContain('REQUEST_MALFORMED');
    }
    expect(await t.service.versions.drafts()).toHaveLength(before);
  });
});
