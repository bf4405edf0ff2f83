import { describe, expect, it } from 'vitest';
import { SCHEMA_REFUSALS_MAX, SCHEMA_REFUSED_METRIC } from '../../../src/observability/stream-metric-names.ts';
import { parsePrometheusText, sumOf } from '../../../src/portal/prometheus-text.ts';
import { SchemaRefusals } from '../../../src/stream/protect/schema-refusals.ts';
import { StreamMetrics } from '../../../src/stream/protect/stream-metrics.ts';

describe('SchemaRefusals (schema versions a pipeline refuses for lacking a mapped path)', () => {
  it('counts every dead letter, logs each schema id once, lists id and path, and forgets them on a configuration change', async () => {
    const metrics = new StreamMetrics();
    const warnings: Record<string, unknown>[] = [];
    const refusals = new SchemaRefusals('customers', metrics, { warn: (obj) => warnings.push(obj) });
    refusals.count(12, 'cards[].expMonth', 3);
    refusals.count(12, 'cards[].expMonth', 2);
    refusals.count(13, 'email', 1);
    expect(refusals.list()).toEqual([
      { schemaId: 12, path: 'cards[].expMonth' },
      { schemaId: 13, path: 'email' },
    ]);
    expect(warnings).toEqual([
      { pipeline: 'customers', schemaId: 12, path: 'cards[].expMonth', code: 'SCHEMA_PATH_UNKNOWN' },
      { pipeline: 'customers', schemaId: 13, path: 'email', code: 'SCHEMA_PATH_UNKNOWN' },
    ]);
    const samples = parsePrometheusText(await metrics.registry.metrics());
    expect(sumOf(samples, SCHEMA_REFUSED_METRIC, { pipeline: 'customers', schema: '12', path: 'cards[].expMonth' })).toBe(5);
    refusals.clear();
    expect(refusals.list()).toEqual([]);
    refusals.count(12, 'cards[].expMonth', 1);
    expect(warnings).toHaveLength(3);
  });

  it('keeps at most SCHEMA_REFUSALS_MAX schema ids; further ones count under (other), unlogged', async () => {
    const metrics = new StreamMetrics();
    const warnings: unknown[] = [];
    const refusals = new SchemaRefusals('orders', metrics, { warn: (obj) => warnings.push(obj) });
    for (let id = 0; id < SCHEMA_REFUSALS_MAX + 5; id++) refusals.count(id, 'x', 1);
    expect(refusals.list()).toHaveLength(SCHEMA_REFUSALS_MAX);
    expect(warnings).toHaveLength(SCHEMA_REFUSALS_MAX);
    expect(sumOf(parsePrometheusText(await metrics.registry.metrics()), SCHEMA_REFUSED_METRIC, { pipeline: 'orders', schema: '(other)' })).toBe(5);
  });
});
