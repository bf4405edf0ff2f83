import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StreamMetrics } from '../../src/stream/protect/index.ts';
import { startTestService, type TestService } from '../helpers/http-service.ts';
import { portalConfigText, signIn, type PortalClient } from '../helpers/portal-client.ts';
import { freePorts } from '../helpers/processes.ts';
import { pipelineYaml } from '../helpers/pipeline-yaml.ts';

/**
 * The Pipelines page over real HTTP, its processors' /metrics served by a real local HTTP server
 * from a StreamMetrics registry (what `veil stream protect` serves), one endpoint answering 500,
 * one not Prometheus text, one refusing connections.
 */
let t: TestService;
let viewer: PortalClient;
let processor: Server;
let base: string;
let closedPort: number;
const metrics = new StreamMetrics();

const pipelineWith = (name: string, urls: string[]) => pipelineYaml(name, urls.length ? `    metricsUrls: [${urls.map((u) => `'${u}'`).join(', ')}]\n` : '');

beforeAll(async () => {
  processor = createServer((req, res) => {
    if (req.url?.startsWith('/metrics'))
      void metrics.registry.metrics().then((text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text));
    else if (req.url === '/broken') res.writeHead(500).end('boom');
    else res.writeHead(200, { 'content-type': 'text/html' }).end('<html><script>alert(1)</script></html>');
  });
  await new Promise<void>((r) => processor.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(processor.address() as { port: number }).port}`;
  closedPort = await freePorts(1);
  const pipelines = `pipelines:\n${pipelineWith('customers', [`${base}/metrics?token=hunter2`, `http://127.0.0.1:${closedPort}/metrics`])}${pipelineWith('orders', [`${base}/broken`, `${base}/html`])}${pipelineWith('plain', [])}`;
  t = await startTestService({ configText: await portalConfigText(pipelines) });
  viewer = await signIn(t.url, 'viewer');
});
afterAll(async () => {
  await t?.close();
  processor.closeAllConnections();
  await new Promise((r) => processor.close(r));
});

const cell = (page: string, row: string, column: number) => {
  const tr = new RegExp(`<tr><th scope="row">${row}[\\s\\S]*?</tr>`).exec(page)![0];
  return [...tr.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)][column]![1]!;
};

describe('Pipelines page: processor metrics', () => {
  it('charts records in / out / dead-lettered and lag as inline SVG, with the numbers as text', async () => {
    metrics.recordsIn.inc({ pipeline: 'customers' }, 100);
    metrics.recordsOut.inc({ pipeline: 'customers' }, 95);
    metrics.deadLettered.inc({ pipeline: 'customers', code: 'FIELD_INVALID' }, 2);
    metrics.recordsIn.inc({ pipeline: 'someone-else' }, 1000);
    await t.service.pipelineMetrics.scrape();
    await new Promise((r) => setTimeout(r, 50));
    metrics.recordsIn.inc({ pipeline: 'customers' }, 50);
    metrics.recordsOut.inc({ pipeline: 'customers' }, 50);
    metrics.deadLettered.inc({ pipeline: 'customers', code: 'FIELD_INVALID' }, 1);
    metrics.lag.set({ pipeline: 'customers', topic: 'raw.customers', partition: '0' }, 7);
    metrics.lag.set({ pipeline: 'customers', topic: 'raw.customers', partition: '1' }, 5);
    await t.service.pipelineMetrics.scrape();

    const res = await viewer.get('/admin/pipelines');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    const customers = res.text.slice(res.text.indexOf('<h2>customers</h2>'), res.text.indexOf('<h2>orders</h2>'));
    expect(customers).toContain('<h3>Processor metrics</h3>');
    expect(customers.match(/<svg class="spark"[^>]*role="img"/g) ?? []).toHaveLength(4);
    expect(customers).toContain('<title id="spark-');
    // totals and the latest values as text
    expect(cell(customers, 'Records in', 2)).toBe('150');
    expect(cell(customers, 'Records out', 2)).toBe('145');
    expect(cell(customers, 'Dead-lettered', 2)).toBe('3');
    expect(cell(customers, 'Lag', 1)).toBe('12');
    expect(Number(cell(customers, 'Records in', 1))).toBeGreaterThan(0);
    // the reachable processor and the refusing one; the URL without its query
    expect(customers).toContain(`<code>${base}/metrics</code>: <span class="ok">reachable</span>`);
    expect(customers).toContain(`<code>http://127.0.0.1:${closedPort}/metrics</code>: <strong class="error">unreachable</strong> (connection refused)`);
    // the unmapped guard found nothing: said so, no table (test/portal/pipelines-findings.test.ts has findings)
    expect(customers).toContain('Personal data at paths the mapping does not name</h3>\n<p class="muted">None reported by the reachable processors');
  });

  it("lists the schema versions a processor refuses (a mapped path the writer's schema lacks), once each, escaped", async () => {
    metrics.schemaRefused.inc({ pipeline: 'customers', schema: '12', path: 'cards[].expMonth' }, 3);
    metrics.schemaRefused.inc({ pipeline: 'customers', schema: '13', path: '<b>x</b>' }, 1);
    metrics.schemaRefused.inc({ pipeline: 'someone-else', schema: '99', path: 'other' }, 1);
    await t.service.pipelineMetrics.scrape();
    const res = await viewer.get('/admin/pipelines');
    const customers = res.text.slice(res.text.indexOf('<h2>customers</h2>'), res.text.indexOf('<h2>orders</h2>'));
    expect(customers).toContain('Schema versions refused');
    expect(customers).toContain('<li>schema <code>12</code>: no field at <code>cards[].expMonth</code></li>');
    expect(customers).toContain('&lt;b&gt;x&lt;/b&gt;');
    expect(customers).not.toContain('<b>x</b>');
    expect(customers).not.toContain('<code>99</code>');
    expect(res.text.slice(res.text.indexOf('<h2>orders</h2>'))).not.toContain('Schema versions refused');
  });

  it('shows an endpoint answering an error or something else than Prometheus text as unreachable, escaped, and a pipeline without URLs as such', async () => {
    const page = (await viewer.get('/admin/pipelines')).text;
    const orders = page.slice(page.indexOf('<h2>orders</h2>'), page.indexOf('<h2>plain</h2>'));
    expect(orders).toContain(`<code>${base}/broken</code>: <strong class="error">unreachable</strong> (HTTP 500)`);
    expect(orders).toContain(`<code>${base}/html</code>: <strong class="error">unreachable</strong> (not Prometheus text)`);
    expect(orders).toContain('no data yet');
    expect(cell(orders, 'Records in', 1)).toBe('–');
    expect(page.slice(page.indexOf('<h2>plain</h2>'))).toContain('lists no <code>metricsUrls</code>');
    expect(page).not.toContain('alert(1)');
    expect(page).not.toMatch(/<script(?! src="\/admin\/static\/)/);
  });

  it('never puts the URL query (a token) into the page or the logs', async () => {
    const page = (await viewer.get('/admin/pipelines')).text;
    expect(page).not.toContain('hunter2');
    expect(page).not.toContain('?token');
    expect(t.logs.join('')).toContain('connection refused');
    expect(t.logs.join('')).not.toContain('hunter2');
  });

  it('a processor that stops answering turns unreachable: the chart gets a gap, the page still renders', async () => {
    processor.closeAllConnections();
    await new Promise((r) => processor.close(r));
    await t.service.pipelineMetrics.scrape();
    const page = (await viewer.get('/admin/pipelines')).text;
    const customers = page.slice(page.indexOf('<h2>customers</h2>'), page.indexOf('<h2>orders</h2>'));
    expect(customers).toMatch(
      new RegExp(
        `<code>${base}/metrics</code>: <strong class="error">unreachable</strong> \\((connection refused|connection closed)\\), last reached at \\d\\d:\\d\\d:\\d\\d UTC`,
      ),
    );
    expect(cell(customers, 'Lag', 1)).toBe('–');
    expect(cell(customers, 'Records in', 2)).toBe('–');
    await new Promise<void>((r) => processor.listen(Number(new URL(base).port), '127.0.0.1', r));
  });

  it('refuses a metrics URL holding credentials at validation, without echoing them', async () => {
    const { compileVeilConfigText } = await import('../../src/app/config-file.ts');
    const text = await portalConfigText(`pipelines:\n${pipelineWith('p', ['http://admin:s3cret@127.0.0.1:9464/metrics'])}`);
    const issues = compileVeilConfigText(text).issues.filter((i) => i.severity === 'error');
    expect(issues.map((i) => i.pointer)).toEqual(['/pipelines/p/metricsUrls/0']);
    expect(JSON.stringify(issues)).not.toContain('s3cret');
  });
});
