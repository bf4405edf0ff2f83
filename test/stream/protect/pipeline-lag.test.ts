import { describe, expect, it } from 'vitest';
import { emailPipelineConfig, emailProtectPipeline } from '../email-pipeline.ts';
import { StreamMetrics } from '../../../src/stream/protect/stream-metrics.ts';
import type { Batch, InRecord } from '../../../src/kafka/index.ts';
import { STREAM_METRIC_NAMES } from '../../../src/observability/stream-metric-names.ts';
import { FakeKafka } from '../fake-kafka.ts';

const config = emailPipelineConfig();

const rec = (offset: number): InRecord => ({
  topic: 'raw',
  partition: 0,
  offset: String(offset),
  key: null,
  value: Buffer.from(`{"id":${offset},"email":"a@b.c"}`),
  headers: [],
  timestamp: '0',
});
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => rec(from + i));
const beat = async () => undefined;

async function started(delivery: 'exactly-once' | 'at-least-once' = 'exactly-once') {
  const kafka = new FakeKafka();
  const metrics = new StreamMetrics();
  const p = emailProtectPipeline(config, kafka, { config: { ...config.pipelines.p!, delivery }, metrics });
  await p.start();
  kafka.events.assigned!({ raw: [0] });
  const lag = async () => (await metrics.lag.get()).values.find((v) => v.labels.partition === '0')?.value;
  return { kafka, p, lag };
}

/**
 * Lag that means what it says: a topic written by transactions ends with transaction markers no
 * batch holds; the pipeline commits past them (with the batch when the consumer knows the end,
 * else once caught up, in a transaction of offsets only), so the group's offset and
 * veil_stream_consumer_lag reach the high watermark — never past a record not processed.
 */
describe('ProtectPipeline: lag measured against the last record a read_committed reader can reach', () => {
  it('the metric is named as the portal and the docs read it', () => {
    expect(STREAM_METRIC_NAMES.lag).toBe('veil_stream_consumer_lag');
  });

  it('a batch whose end is past its last record commits the end with its records: lag 0', async () => {
    const { kafka, lag } = await started();
    const batch: Batch = { topic: 'raw', partition: 0, records: range(0, 9), highWatermark: '11', end: '11' };
    await kafka.handler!(batch, beat);
    expect(kafka.committed.length).toBe(10);
    expect(kafka.offsets.get('raw/0')).toBe('11');
    expect(await lag()).toBe(0);
  });

  it('caught up past a marker no batch held: the position committed in a transaction of offsets only, lag 0', async () => {
    const { kafka, lag } = await started();
    await kafka.handler!({ topic: 'raw', partition: 0, records: range(0, 9), highWatermark: '11' }, beat);
    expect(kafka.offsets.get('raw/0')).toBe('10');
    expect(await lag()).toBe(1);
    const records = kafka.committed.length;
    const transactions = kafka.transactionsCommitted;
    await kafka.caughtUp!({ topic: 'raw', partition: 0, offset: '11', highWatermark: '11' });
    expect(kafka.offsets.get('raw/0')).toBe('11');
    expect(kafka.committed.length).toBe(records);
    expect(kafka.transactionsCommitted).toBe(transactions + 1);
    expect(await lag()).toBe(0);
  });

  it('a caught-up position not beyond the committed offset commits nothing and reports the lag from the committed offset', async () => {
    const { kafka, lag } = await started();
    kafka.offsets.set('raw/0', '20');
    const transactions = kafka.transactionsCommitted;
    await kafka.caughtUp!({ topic: 'raw', partition: 0, offset: '20', highWatermark: '20' });
    expect(kafka.transactionsCommitted).toBe(transactions);
    expect(kafka.offsets.get('raw/0')).toBe('20');
    expect(await lag()).toBe(0);
  });

  it('a failed offsets-only commit rejects (the consumer tries again) and leaves the offset where it was', async () => {
    const { kafka, lag } = await started();
    await kafka.handler!({ topic: 'raw', partition: 0, records: range(0, 4), highWatermark: '6' }, beat);
    kafka.failNextCommit = { landed: false };
    await expect(kafka.caughtUp!({ topic: 'raw', partition: 0, offset: '6', highWatermark: '6' })).rejects.toMatchObject({ code: 'TRANSACTION_ABORTED' });
    expect(kafka.offsets.get('raw/0')).toBe('5');
    expect(await lag()).toBe(1);
    await kafka.caughtUp!({ topic: 'raw', partition: 0, offset: '6', highWatermark: '6' });
    expect(kafka.offsets.get('raw/0')).toBe('6');
    expect(await lag()).toBe(0);
  });

  it('at-least-once: the caught-up position is committed by the consumer', async () => {
    const { kafka, lag } = await started('at-least-once');
    await kafka.handler!({ topic: 'raw', partition: 0, records: range(0, 2), highWatermark: '4' }, beat);
    expect(kafka.offsets.get('raw/0')).toBe('3');
    await kafka.caughtUp!({ topic: 'raw', partition: 0, offset: '4', highWatermark: '4' });
    expect(kafka.offsets.get('raw/0')).toBe('4');
    expect(await lag()).toBe(0);
  });

  it('records still to come are lag: a high watermark beyond the committed end counts them', async () => {
    const { kafka, lag } = await started();
    await kafka.handler!({ topic: 'raw', partition: 0, records: range(0, 9), highWatermark: '50', end: '11' }, beat);
    expect(await lag()).toBe(39);
  });
});
