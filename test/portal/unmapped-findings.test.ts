import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { compileVeilConfigText } from '../../src/app/config-file.ts';
import { findingsOf, FINDINGS_KEPT, PipelineMetrics, sumFindings } from '../../src/portal/pipeline-metrics.ts';
import { parsePrometheusText } from '../../src/portal/prometheus-text.ts';
import { PortalFault } from '../../src/portal/errors.ts';
import { buildFindingsDraft, classOf, findingField, findingOfField, missingGrant, planFindings } from '../../src/portal/unmapped-draft.ts';
import type { PipelineConfig } from '../../src/stream/config/index.ts';
import { StreamMetrics } from '../../src/stream/protect/index.ts';
import { EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';

const M = 'veil_stream_unmapped_findings_total';

/** Prometheus text as a processor (or something pretending to be one) serves it. */
const HOSTILE = `# HELP ${M} Records dead-lettered by the unmapped guard
# TYPE ${M} counter
${M}{pipeline="customers",path="contact.email",kind="email"} 12
${M}{pipeline="customers",path="profile.contacts[].phone",kind="phone"} 3
${M}{pipeline="customers",path="byEmail.*",kind="email"} 5
${M}{pipeline="customers",path="(other)",kind="iban"} 2
${M}{pipeline="customers",path="card",kind="tag:PII"} 4
${M}{pipeline="customers",path="<script>alert(1)</script>",kind="email"} 7
${M}{pipeline="customers",path="x\\"onmouseover=\\"alert(1)",kind="<img src=x>"} 1
${M}{pipeline="customers",path="contact.email",kind="email",instance="b"} 8
${M}{pipeline="customers",path="zero",kind="email"} 0
${M}{pipeline="customers",path="nan",kind="email"} NaN
${M}{pipeline="customers",kind="email"} 9
${M}{pipeline="orders",path="contact.email",kind="email"} 99
veil_stream_records_in_total{pipeline="customers"} 100
`;

describe('the findings scrape', () => {
  it('reads (path, kind) → total for one pipeline, sums repeated series, skips other pipelines, zero, NaN and unlabelled series, largest first', () => {
    const { findings, omitted } = findingsOf(parsePrometheusText(HOSTILE), 'customers');
    expect(findings).toEqual([
      { path: 'contact.email', kind: 'email', records: 20 },
      { path: '<script>alert(1)</script>', kind: 'email', records: 7 },
      { path: 'byEmail.*', kind: 'email', records: 5 },
      { path: 'card', kind: 'tag:PII', records: 4 },
      { path: 'profile.contacts[].phone', kind: 'phone', records: 3 },
      { path: '(other)', kind: 'iban', records: 2 },
      { path: 'x"onmouseover="alert(1)', kind: '<img src=x>', records: 1 },
    ]);
    expect(omitted).toBe(0);
    expect(findingsOf(parsePrometheusText(HOSTILE), 'nobody')).toEqual({ findings: [], omitted: 0 });
  });

  it("reads report mode's counts (veil_stream_unmapped_reported_total) beside the dead letters of the same path and kind", () => {
    const R = 'veil_stream_unmapped_reported_total';
    const text = `${M}{pipeline="p",path="a",kind="email"} 2\n${R}{pipeline="p",path="a",kind="email"} 5\n${R}{pipeline="p",path="b",kind="phone"} 1\n${R}{pipeline="q",path="b",kind="phone"} 9\n`;
    expect(findingsOf(parsePrometheusText(text), 'p').findings).toEqual([
      { path: 'a', kind: 'email', records: 2, reported: 5 },
      { path: 'b', kind: 'phone', records: 0, reported: 1 },
    ]);
  });

  it('keeps at most the cap, counting the rest and labels longer than any path as omitted', () => {
    const lines = Array.from({ length: FINDINGS_KEPT + 30 }, (_, i) => `${M}{pipeline="p",path="f${i}",kind="email"} ${i + 1}`);
    lines.push(`${M}{pipeline="p",path="${'a'.repeat(5000)}",kind="email"} 1000000`);
    const { findings, omitted } = findingsOf(parsePrometheusText(lines.join('\n')), 'p');
    expect(findings).toHaveLength(FINDINGS_KEPT);
    expect(findings[0]).toEqual({ path: `f${FINDINGS_KEPT + 29}`, kind: 'email', records: FINDINGS_KEPT + 30 });
    expect(omitted).toBe(31);
  });

  it('sums over processors', () => {
    const a = {
      findings: [
        { path: 'a', kind: 'email', records: 2 },
        { path: 'b', kind: 'phone', records: 1 },
      ],
      findingsOmitted: 1,
    };
    const b = { findings: [{ path: 'a', kind: 'email', records: 3 }] };
    expect(sumFindings([a, b])).toEqual({
      findings: [
        { path: 'a', kind: 'email', records: 5 },
        { path: 'b', kind: 'phone', records: 1 },
      ],
      omitted: 1,
    });
    expect(sumFindings([a, b], 1)).toEqual({ findings: [{ path: 'a', kind: 'email', records: 5 }], omitted: 2 });
  });

  it("PipelineMetrics keeps each processor's findings from its last good scrape and sums the reachable ones", async () => {
    const one = new StreamMetrics();
    one.countUnmapped('customers', 'contact.email', 'email', 4);
    const bodies: Record<string, () => Promise<string> | string> = {
      'http://p1.test/metrics': () => one.registry.metrics(),
      'http://p2.test/metrics': () =>
        `${M}{pipeline="customers",path="contact.email",kind="email"} 6\n${M}{pipeline="customers",path="phone2",kind="phone"} 1\n`,
    };
    let down = false;
    const scraper = new PipelineMetrics({
      pipelines: () => ({ customers: { metricsUrls: Object.keys(bodies) } as unknown as PipelineConfig }),
      fetch: (async (url: string) =>
        down && url.includes('p2')
          ? Promise.reject(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }))
          : new Response(await bodies[url]!())) as typeof fetch,
    });
    expect(scraper.findings('customers')).toBeUndefined();
    await scraper.scrape();
    expect(scraper.findings('customers')).toEqual({
      findings: [
        { path: 'contact.email', kind: 'email', records: 10 },
        { path: 'phone2', kind: 'phone', records: 1 },
      ],
      omitted: 0,
      reachable: 2,
    });
    down = true;
    await scraper.scrape();
    expect(scraper.findings('customers')).toEqual({ findings: [{ path: 'contact.email', kind: 'email', records: 4 }], omitted: 0, reachable: 1 });
    expect(scraper.series('customers')!.sources[1]).not.toHaveProperty('findings');
  });
});

/** the example configuration with one pipeline; `extra` lines go into the pipeline */
function configWith(pipeline: string): string {
  return `${EXAMPLE_CONFIG_TEXT}\npipelines:\n  customers:\n    source: { topics: [raw.customers] }\n    sink: { topic: clean.customers }\n    deadLetterTopic: dlq.customers\n    format: json\n${pipeline}`;
}
const INGEST = `    fields:
      - { path: email, field: Customer.email }   # the login
      - { path: 'cards[].number', field: Customer.cardNumber }
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
`;

function active(text: string) {
  const compiled = compileVeilConfigText(text);
  expect(compiled.issues.filter((i) => i.severity === 'error')).toEqual([]);
  return compiled.config!;
}

describe('a draft from the findings', () => {
  const findings = [
    { path: 'contact.email', kind: 'email', records: 20 },
    { path: 'profile.contacts[].phone', kind: 'phone', records: 3 },
    { path: 'byEmail.*', kind: 'email', records: 5 },
    { path: '(other)', kind: 'iban', records: 2 },
    { path: 'card', kind: 'tag:PII', records: 4 },
    { path: 'Email', kind: 'email', records: 2 },
    { path: 'contact.email', kind: 'phone', records: 1 },
    { path: '<script>alert(1)</script>', kind: 'email', records: 7 },
    { path: 'ok', kind: '<img src=x>', records: 1 },
    { path: 'holder.name', kind: 'person-name', records: 6 },
  ];

  it("plans each finding: the pipeline's class and the proposal's property, or why not", () => {
    const text = configWith(INGEST);
    const pipeline = active(text).pipelines.customers!;
    expect(classOf(pipeline)).toBe('Customer');
    expect(
      classOf({
        fields: [
          { path: 'a', field: 'Order.x' },
          { path: 'b', field: 'Customer.email' },
        ],
        key: { field: 'Customer.email' },
        source: { topics: ['raw.orders'] },
      }),
    ).toBe('Customer');
    expect(classOf({ fields: [], source: { topics: ['raw.invoices.v2'] } })).toBe('Invoice');
    expect(planFindings(findings, pipeline).map((p) => (p.map ? p.field : p.why))).toEqual([
      'Customer.email',
      'Customer.phone',
      'key',
      'other',
      'tag',
      'mapped',
      'repeated',
      'path',
      'kind',
      'Customer.name',
    ]);
    // keys: exact tells Email from email
    expect(planFindings([{ path: 'Email', kind: 'email' }], { ...pipeline, keys: 'exact' })[0]).toEqual({ map: true, field: 'Customer.email' });
  });

  it("adds the mappable paths to the ACTIVE pipeline's fields, the properties the class lacks with their sequence and key, and keeps the rest", () => {
    const text = configWith(INGEST);
    const draft = buildFindingsDraft(text, active(text), 'customers', findings);
    expect(draft.mapped.map((f) => `${f.path} ${f.field}`)).toEqual([
      'contact.email Customer.email',
      'profile.contacts[].phone Customer.phone',
      'holder.name Customer.name',
    ]);
    expect(draft.skipped.map((f) => f.path)).toEqual(['byEmail.*', '(other)', 'card', 'Email', 'contact.email', '<script>alert(1)</script>', 'ok']);
    expect(draft.grant).toBeUndefined(); // ingest holds Protect on Customer.*
    const doc = parse(draft.text);
    expect(doc.pipelines.customers.fields).toEqual([
      { path: 'email', field: 'Customer.email' },
      { path: 'cards[].number', field: 'Customer.cardNumber' },
      { path: 'contact.email', field: 'Customer.email' },
      { path: 'profile.contacts[].phone', field: 'Customer.phone' },
      { path: 'holder.name', field: 'Customer.name' },
    ]);
    // kept as they were: the existing email and name properties; added: phone, its sequence and key
    expect(doc.classes.Customer.properties.email).toEqual(parse(text).classes.Customer.properties.email);
    expect(doc.classes.Customer.properties.name).toEqual(parse(text).classes.Customer.properties.name);
    expect(doc.classes.Customer.properties.phone).toMatchObject({ protect: 'phone-fpe' });
    expect(doc.sequences['phone-fpe']).toBeDefined();
    // only what the new property needs: email and name kept their sequences and keys
    expect(Object.keys(doc.keys)).toEqual([...Object.keys(parse(text).keys), 'discovered-ff1']);
    expect(doc.keys['discovered-ff1']).toEqual({ type: 'ff1', version: 1 });
    expect(Object.keys(doc.sequences)).toEqual([...Object.keys(parse(text).sequences), 'phone-fpe']);
    expect(doc.classes.Customer.properties.phone.description).toBe(
      'phone the unmapped guard of pipeline customers found at profile.contacts[].phone (3 records dead-lettered)',
    );
    // comments kept, the new entries say where they come from, no other pipeline appears
    expect(draft.text).toContain('# the login');
    expect(draft.text).toContain('{ path: contact.email, field: Customer.email } # unmapped guard: email, 20 records dead-lettered');
    expect(Object.keys(doc.pipelines)).toEqual(['customers']);
    expect(doc.rightsContexts).toEqual(parse(text).rightsContexts);
    const issues = compileVeilConfigText(draft.text).issues;
    expect(issues.filter((i) => i.severity === 'error')).toEqual([]);
    expect(issues.length).toBe(compileVeilConfigText(text).issues.length);
  });

  it("grants the pipeline's own rights context Protect on the new fields it cannot protect yet", () => {
    const text = configWith(INGEST.replace('roles: [ingest]', 'roles: [support]').replace('Role: ingest', 'Role: support'));
    const config = active(text);
    expect(missingGrant(config.engine, config.pipelines.customers!, ['Customer.email', 'Customer.phone'])).toEqual({
      context: 'support',
      fields: ['Customer.phone'],
    });
    const draft = buildFindingsDraft(text, config, 'customers', [
      { path: 'contact.email', kind: 'email', records: 1 },
      { path: 'mobile', kind: 'phone', records: 1 },
    ]);
    expect(draft.grant).toEqual({ context: 'support', fields: ['Customer.phone'] });
    expect(parse(draft.text).rightsContexts.support.grants.at(-1)).toEqual({ actions: ['Protect'], fields: ['Customer.phone'] });
    expect(compileVeilConfigText(draft.text).issues.filter((i) => i.severity === 'error')).toEqual([]);
    // a role the pipeline does not hold matches nothing: no grant is invented
    expect(missingGrant(config.engine, { roles: [], rightsEvidences: { Role: 'support' } }, ['Customer.phone'])).toBeUndefined();
  });

  it('refuses to draft nothing, and a pipeline the active version does not have', () => {
    const text = configWith(INGEST);
    const nothing = [
      { path: 'EMAIL', kind: 'email', records: 1 },
      { path: 'a.*', kind: 'email', records: 1 },
    ] as const;
    expect(() => buildFindingsDraft(text, active(text), 'customers', [...nothing])).toThrow(PortalFault);
    expect(() => buildFindingsDraft(text, active(text), 'customers', [...nothing])).toThrow(/^nothing to map/);
    expect(() => buildFindingsDraft(text, active(text), 'orders', [{ path: 'x', kind: 'email', records: 1 }])).toThrow(/no pipeline orders/);
    expect(() => buildFindingsDraft(text, active(text), '__proto__', [{ path: 'x', kind: 'email', records: 1 }])).toThrow(/no pipeline/);
  });

  it('the form carries path, kind and a whole count; a tampered one is refused', () => {
    expect(findingField({ path: 'contact.email', kind: 'email', records: 20.4 })).toBe('contact.email\temail\t20');
    expect(findingOfField('contact.email\temail\t20')).toEqual({ path: 'contact.email', kind: 'email', records: 20 });
    expect(findingOfField('cards[].number\tpayment-card\t1')).toEqual({ path: 'cards[].number', kind: 'payment-card', records: 1 });
    for (const bad of [
      'byEmail.*\temail\t1',
      '(other)\temail\t1',
      '<script>x</script>\temail\t1',
      'a..b\temail\t1',
      'a[][]\temail\t1',
      '\temail\t1',
      'a b\temail\t1',
      'contact.email\tsecret-kind\t1',
      'contact.email\ttag:PII\t1',
      'contact.email\tip-address\t1',
      'contact.email\t\t1',
      'contact.email\temail\t0',
      'contact.email\temail\t-1',
      'contact.email\temail\t1.5',
      'contact.email\temail\t1e3',
      'contact.email\temail\t99999999999999999',
      'contact.email\temail',
      'contact.email\temail\t1\textra',
      `${'a'.repeat(1025)}\temail\t1`,
    ])
      expect(findingOfField(bad), bad).toBeUndefined();
  });
});
