import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/http-service.ts';
import { signIn, startPortalService, type PortalClient } from '../helpers/portal-client.ts';
import { pipelineYaml } from '../helpers/pipeline-yaml.ts';
import { serveMetrics, type ServedMetrics } from '../helpers/prometheus.ts';

/**
 * The Pipelines page's unmapped findings over real HTTP: a processor's /metrics (a local HTTP
 * server serving Prometheus text, hostile label values included), the table for a viewer, the
 * draft form for an editor, and the draft route refusing what the page would not have sent.
 */
const M = 'veil_stream_unmapped_findings_total';
let t: TestService;
let processor: ServedMetrics;
let viewer: PortalClient;
let editor: PortalClient;
let body = '';

beforeAll(async () => {
  processor = await serveMetrics(() => body);
  body = [
    `${M}{pipeline="customers",path="contact.email",kind="email"} 12`,
    `${M}{pipeline="customers",path="profile.contacts[].phone",kind="phone"} 3`,
    `${M}{pipeline="customers",path="byEmail.*",kind="email"} 5`,
    `${M}{pipeline="customers",path="(other)",kind="iban"} 2`,
    `${M}{pipeline="customers",path="card",kind="tag:PII"} 4`,
    `${M}{pipeline="customers",path="<script>alert(1)</script>",kind="email"} 7`,
    `${M}{pipeline="customers",path="x\\"onmouseover=\\"alert(1)",kind="<img src=x onerror=alert(2)>"} 1`,
    `${M}{pipeline="customers",path="EMAIL",kind="email"} 1`,
    '',
  ].join('\n');
  t = await startPortalService({ extra: `pipelines:\n${pipelineYaml('customers', `    metricsUrls: ['${processor.url}']\n`)}${pipelineYaml('orders')}` });
  viewer = await signIn(t.url, 'viewer');
  editor = await signIn(t.url, 'editor');
  await t.service.pipelineMetrics.scrape();
});
afterAll(async () => {
  await t?.close();
  await processor.close();
});

const section = (page: string) => page.slice(page.indexOf('<h2>customers</h2>'), page.indexOf('<h2>orders</h2>'));
// path, kind, records dead-lettered, what a draft does (the column of report mode's passed records, 0 here, skipped)
const rows = (page: string) =>
  [
    ...section(page).matchAll(
      /<tr><th scope="row"><code>([\s\S]*?)<\/code><\/th><td>([^<]*?)<\/td><td class="num">(\d+)<\/td><td class="num">0<\/td>\s*<td>([\s\S]*?)<\/td><\/tr>/g,
    ),
  ].map((m) => [m[1], m[2], m[3], m[4]!.replace(/<[^>]+>/g, '')]);

describe('Pipelines page: personal data at paths the mapping does not name', () => {
  it('lists path, kind and records per finding, escaped, with what a draft would do with each', async () => {
    const res = await viewer.get('/admin/pipelines');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(section(res.text)).toContain('Personal data at paths the mapping does not name');
    expect(rows(res.text)).toEqual([
      ['contact.email', 'email', '12', 'mapped as Customer.email'],
      ['&lt;script&gt;alert(1)&lt;/script&gt;', 'email', '7', 'not a pipeline path'],
      ['byEmail.*', 'email', '5', 'the data sits in an object key: no path can name it'],
      ['card', 'tag:PII', '4', 'a field the schema tags: map the tag under tags, not the path'],
      ['profile.contacts[].phone', 'phone', '3', 'mapped as Customer.phone'],
      ['(other)', 'iban', '2', 'paths beyond the 100 a processor names: its log names each one'],
      ['EMAIL', 'email', '1', 'mapped in the active version'],
      ['x&quot;onmouseover=&quot;alert(1)', '&lt;img src=x onerror=alert(2)&gt;', '1', 'not a pipeline path'],
    ]);
    expect(res.text).not.toContain('<script>alert');
    expect(res.text).not.toContain('<img src=x');
    expect(res.text).not.toMatch(/<script(?! src="\/admin\/static\/)/);
    // a viewer gets no form, only the note that an editor can
    expect(section(res.text)).not.toContain('action="/admin/pipelines/draft"');
    expect(section(res.text)).toContain('An editor can turn the 2 path(s)');
    // the other pipeline has no metricsUrls: no findings section
    expect(res.text.slice(res.text.indexOf('<h2>orders</h2>'))).not.toContain('Personal data at paths');
  });

  it('gives an editor a CSRF form carrying the mappable findings only', async () => {
    const page = section((await editor.get('/admin/pipelines')).text);
    const form = /<form method="post" action="\/admin\/pipelines\/draft"[\s\S]*?<\/form>/.exec(page)![0];
    expect(form).toContain(`name="_csrf" value="${editor.csrf}"`);
    expect(form).toContain('<input type="hidden" name="pipeline" value="customers">');
    expect([...form.matchAll(/name="finding" value="([^"]*)"/g)].map((m) => m[1])).toEqual(['contact.email\temail\t12', 'profile.contacts[].phone\tphone\t3']);
    expect(form).toContain('>Create a draft mapping these paths</button>');
  });

  it('creates a draft from the active version in which the pipeline maps the paths, audited', async () => {
    const res = await editor.post('/admin/pipelines/draft', { pipeline: 'customers', finding: 'contact.email\temail\t12' });
    expect(res.status).toBe(303);
    const id = /^\/admin\/drafts\/([0-9a-f-]{36})\?done=mapped$/.exec(res.location!)![1]!;
    const draft = await t.service.versions.draft(id);
    expect(draft.basedOn).toBe(t.service.versions.active());
    const doc = parse(await t.service.versions.draftText(id));
    expect(doc.pipelines.customers.fields).toEqual([
      { path: 'email', field: 'Customer.email' },
      { path: 'contact.email', field: 'Customer.email' },
    ]);
    expect(doc.pipelines.orders.fields).toEqual([{ path: 'email', field: 'Customer.email' }]);
    expect(t.audit.events.some((e) => e.admin?.action === 'draft.unmapped' && e.admin.target === `draft ${id}` && e.outcome === 'ok')).toBe(true);
    const page = await editor.get(res.location!);
    expect(page.text).toContain('Draft created: the pipeline maps the paths the unmapped guard found.');
    expect(page.text).toContain('Valid');
  });

  it('refuses tampered findings (bad path, unknown kind, a path with *, (other), a tag, too many) and creates no draft', async () => {
    const before = (await t.service.versions.drafts()).length;
    const forged: Record<string, string>[] = [
      { pipeline: 'customers', finding: '<script>x</script>\temail\t1' },
      { pipeline: 'customers', finding: 'contact.email\tsecret-kind\t1' },
      { pipeline: 'customers', finding: 'byEmail.*\temail\t1' },
      { pipeline: 'customers', finding: '(other)\temail\t1' },
      { pipeline: 'customers', finding: 'card\ttag:PII\t1' },
      { pipeline: 'customers', finding: 'contact.email\temail\t0' },
      { pipeline: 'customers', finding: 'contact.email\temail\tmany' },
      { pipeline: 'customers' },
      { pipeline: 'nope', finding: 'contact.email\temail\t1' },
      { pipeline: '__proto__', finding: 'contact.email\temail\t1' },
    ];
    for (const form of forged) {
      const res = await editor.post('/admin/pipelines/draft', form);
      expect(res.status, JSON.stringify(form)).toBe(400);
      expect(res.text).toContain('REQUEST_MALFORMED');
      expect(res.text).not.toContain('<script>x');
    }
    // more findings than the page ever lists
    const many = new URLSearchParams({ _csrf: editor.csrf, pipeline: 'customers' });
    for (let i = 0; i < 201; i++) many.append('finding', `f${i}\temail\t1`);
    const res = await fetch(`${t.url}/admin/pipelines/draft`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: editor.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: many.toString(),
    });
    expect(res.status).toBe(400);
    expect(await t.service.versions.drafts()).toHaveLength(before);
  });

  it('a path mapped in the active version since is skipped; nothing left to map creates no draft', async () => {
    const before = (await t.service.versions.drafts()).length;
    const res = await editor.post('/admin/pipelines/draft', { pipeline: 'customers', finding: 'Email\temail\t3' });
    expect(res.status).toBe(303);
    expect(res.location).toBe('/admin/pipelines?done=nothing-to-map');
    expect(await t.service.versions.drafts()).toHaveLength(before);
    expect((await editor.get(res.location!)).text).toContain('No draft created: the active version maps every path listed');
  });

  it('refuses a viewer and a POST without the CSRF token', async () => {
    const asViewer = await viewer.post('/admin/pipelines/draft', { pipeline: 'customers', finding: 'contact.email\temail\t1' });
    expect(asViewer.status).toBe(403);
    const noCsrf = await editor.post('/admin/pipelines/draft', { pipeline: 'customers', finding: 'contact.email\temail\t1' }, { csrf: false });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.text).toContain('CSRF_TOKEN_INVALID');
  });
});
