import { describe, expect, it } from 'vitest';
import { parsePrometheusText, sumOf } from '../../../src/portal/prometheus-text.ts';
import { OTHER_PATH, STREAM_METRIC_NAMES, UNMAPPED_FINDINGS_METRIC, UNMAPPED_PATHS_MAX } from '../../../src/observability/stream-metric-names.ts';
import { StreamMetrics } from '../../../src/stream/protect/stream-metrics.ts';

describe('stream metrics the admin portal charts', () => {
  it("are exported by the stream processes' registry, labelled by pipeline, and read back by the portal's parser", async () => {
    const metrics = new StreamMetrics();
    const registered = await metrics.registry.getMetricsAsJSON();
    for (const name of Object.values(STREAM_METRIC_NAMES)) {
      expect(
        registered.map((m) => m.name),
        name,
      ).toContain(name);
      expect((metrics.registry.getSingleMetric(name) as unknown as { labelNames: string[] }).labelNames).toContain('pipeline');
    }
    metrics.recordsIn.inc({ pipeline: 'customers' }, 12);
    metrics.recordsOut.inc({ pipeline: 'customers' }, 10);
    metrics.deadLettered.inc({ pipeline: 'customers', code: 'FIELD_INVALID' }, 1);
    metrics.deadLettered.inc({ pipeline: 'customers', code: 'RECORD_UNREADABLE' }, 1);
    metrics.lag.set({ pipeline: 'customers', topic: 'raw.customers', partition: '0' }, 5);
    metrics.lag.set({ pipeline: 'customers', topic: 'raw.customers', partition: '1' }, 3);
    metrics.recordsIn.inc({ pipeline: 'orders' }, 99);
    const samples = parsePrometheusText(await metrics.registry.metrics());
    const of = (name: string) => sumOf(samples, name, { pipeline: 'customers' });
    expect([of(STREAM_METRIC_NAMES.recordsIn), of(STREAM_METRIC_NAMES.recordsOut), of(STREAM_METRIC_NAMES.deadLettered), of(STREAM_METRIC_NAMES.lag)]).toEqual([
      12, 10, 2, 8,
    ]);
  });

  it('a rebalance drops the lag of partitions the process lost, so a sum over processes counts each partition once', async () => {
    const metrics = new StreamMetrics();
    metrics.setLag('customers', 'raw.customers', 0, 5);
    metrics.setLag('customers', 'raw.customers', 1, 3);
    metrics.setLag('customers', 'raw.other', 0, 7);
    metrics.setLag('orders', 'raw.orders', 1, 11);
    metrics.keepLagOf('customers', { 'raw.customers': [1] });
    const samples = parsePrometheusText(await metrics.registry.metrics());
    expect(sumOf(samples, STREAM_METRIC_NAMES.lag, { pipeline: 'customers' })).toBe(3);
    expect(sumOf(samples, STREAM_METRIC_NAMES.lag, { pipeline: 'orders' })).toBe(11);
    metrics.setLag('customers', 'raw.customers', 0, 2);
    expect(sumOf(parsePrometheusText(await metrics.registry.metrics()), STREAM_METRIC_NAMES.lag, { pipeline: 'customers' })).toBe(5);
  });

  it('counts unmapped findings by pipeline, path and kind, with at most UNMAPPED_PATHS_MAX paths per pipeline (the rest under (other))', async () => {
    const metrics = new StreamMetrics();
    metrics.countUnmapped('customers', 'backupEmail', 'email', 3);
    metrics.countUnmapped('customers', 'backupEmail', 'email', 2);
    for (let i = 0; i < UNMAPPED_PATHS_MAX + 5; i++) metrics.countUnmapped('orders', `f${i}`, 'iban', 1);
    const samples = parsePrometheusText(await metrics.registry.metrics());
    expect(sumOf(samples, UNMAPPED_FINDINGS_METRIC, { pipeline: 'customers', path: 'backupEmail', kind: 'email' })).toBe(5);
    expect(sumOf(samples, UNMAPPED_FINDINGS_METRIC, { pipeline: 'orders', path: OTHER_PATH })).toBe(5);
    expect(samples.filter((x) => x.name === UNMAPPED_FINDINGS_METRIC && x.labels.pipeline === 'orders')).toHaveLength(UNMAPPED_PATHS_MAX + 1);
  });
});
