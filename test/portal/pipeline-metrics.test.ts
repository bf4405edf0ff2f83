import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayUrl, PipelineMetrics } from '../../src/portal/pipeline-metrics.ts';
import type { PipelineConfig } from '../../src/stream/config/index.ts';
import { StreamMetrics } from '../../src/stream/protect/index.ts';

let server: Server;
let base: string;
let metrics = new StreamMetrics();
let mode: 'ok' | 'slow' = 'ok';

beforeAll(async () => {
  server = createServer((req, res) => {
    if (mode === 'slow') return; // never answers
    void metrics.registry.metrics().then((text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const pipeline = (metricsUrls: string[]) => ({ customers: { metricsUrls } as unknown as PipelineConfig });

describe('PipelineMetrics (a real HTTP endpoint serving a StreamMetrics registry)', () => {
  it('turns counters into rates per second, follows a counter reset, sums lag, and keeps the last `keep` samples', async () => {
    metrics = new StreamMetrics();
    let clock = 1_000_000;
    const scraper = new PipelineMetrics({ pipelines: () => pipeline([`${base}/metrics`]), keep: 3, now: () => clock });
    metrics.recordsIn.inc({ pipeline: 'customers' }, 100);
    metrics.lag.set({ pipeline: 'customers', topic: 't', partition: '0' }, 4);
    metrics.lag.set({ pipeline: 'customers', topic: 't', partition: '1' }, 6);
    await scraper.scrape();
    expect(scraper.series('customers')!.samples).toEqual([{ at: clock, recordsIn: null, recordsOut: null, deadLettered: null, lag: 10 }]);

    clock += 5000;
    metrics.recordsIn.inc({ pipeline: 'customers' }, 50);
    metrics.recordsOut.inc({ pipeline: 'customers' }, 25);
    metrics.deadLettered.inc({ pipeline: 'customers', code: 'X' }, 5);
    await scraper.scrape();
    expect(scraper.series('customers')!.samples.at(-1)).toMatchObject({ recordsIn: 10, recordsOut: 5, deadLettered: 1, lag: 10 });
    expect(scraper.series('customers')!.sources[0]).toMatchObject({ state: 'reachable', totals: { recordsIn: 150, recordsOut: 25, deadLettered: 5 } });

    // the processor restarted: its counters start at 0 again
    metrics = new StreamMetrics();
    metrics.recordsIn.inc({ pipeline: 'customers' }, 20);
    clock += 2000;
    await scraper.scrape();
    expect(scraper.series('customers')!.samples.at(-1)).toMatchObject({ recordsIn: 10, recordsOut: 0, lag: null });

    clock += 1000;
    await scraper.scrape();
    expect(scraper.series('customers')!.samples).toHaveLength(3);
  });

  it('marks a processor that does not answer in time unreachable (a gap), and says so once', async () => {
    mode = 'slow';
    const changes: string[] = [];
    const scraper = new PipelineMetrics({
      pipelines: () => pipeline([`${base}/metrics?token=hunter2`]),
      timeoutMs: 200,
      onChange: (_p, s) => changes.push(`${s.url} ${s.state} ${s.reason}`),
    });
    const started = Date.now();
    await scraper.scrape();
    await scraper.scrape();
    expect(Date.now() - started).toBeLessThan(3000);
    mode = 'ok';
    expect(scraper.series('customers')!.sources).toEqual([{ url: `${base}/metrics`, state: 'unreachable', reason: 'timeout' }]);
    expect(scraper.series('customers')!.samples.map((s) => s.recordsIn)).toEqual([null, null]);
    expect(changes).toEqual([`${base}/metrics unreachable timeout`]);
    await scraper.scrape();
    expect(changes.at(-1)).toBe(`${base}/metrics reachable undefined`);
    expect(JSON.stringify(changes)).not.toContain('hunter2');
  });

  it('starts a new series when the configured URLs change, and forgets pipelines no longer configured', async () => {
    let urls = [`${base}/metrics`];
    const scraper = new PipelineMetrics({ pipelines: () => (urls.length ? pipeline(urls) : {}) });
    await scraper.scrape();
    await scraper.scrape();
    expect(scraper.series('customers')!.samples).toHaveLength(2);
    urls = [`${base}/metrics`, `${base}/other`];
    await scraper.scrape();
    expect(scraper.series('customers')!.samples).toHaveLength(1);
    urls = [];
    await scraper.scrape();
    expect(scraper.series('customers')).toBeUndefined();
  });

  it('shows a URL as origin and path only', () => {
    expect(displayUrl('https://metrics.internal:9464/metrics?token=abc#x')).toBe('https://metrics.internal:9464/metrics');
    expect(displayUrl('http://user:pw@h/m')).toBe('http://h/m');
  });
});
