import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { forwardHeaders, TrustedProxies } from '../../src/gateway/forwarding.ts';
import { RECORD_SPAN, TRANSACTION_SPAN } from '../../src/observability/stream-trace.ts';
import { openTracing, type Tracing } from '../../src/observability/tracing.ts';
import { headerValue, type Batch, type Header, type InRecord } from '../../src/kafka/index.ts';
import { ProtectPipeline } from '../../src/stream/protect/index.ts';
import { emailPipelineConfig, emailProtectPipeline } from '../stream/email-pipeline.ts';
import { FakeKafka } from '../stream/fake-kafka.ts';
import { startOtlpReceiver } from './otlp-receiver.ts';

const PRODUCER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const PRODUCER_SPAN = 'b7ad6b7169203331';
const TRACEPARENT = `00-${PRODUCER_TRACE}-${PRODUCER_SPAN}-01`;

const config = emailPipelineConfig();

async function started(kafka: FakeKafka, tracing?: Tracing): Promise<ProtectPipeline> {
  const p = emailProtectPipeline(config, kafka, tracing ? { tracing } : {});
  await p.start();
  kafka.events.assigned!({ raw: [0] });
  return p;
}

const h = (key: string, value: string | null): Header => ({ key, value: value === null ? null : Buffer.from(value) });
const rec = (offset: number, value: string, headers: Header[]): InRecord => ({
  topic: 'raw',
  partition: 0,
  offset: String(offset),
  key: null,
  value: Buffer.from(value),
  headers,
  timestamp: '0',
});
const batch = (records: InRecord[]): Batch => ({ topic: 'raw', partition: 0, records, highWatermark: String(Number(records.at(-1)!.offset) + 1) });
const beat = async () => undefined;
const text = (headers: readonly Header[]) => headers.map((x) => [x.key, x.value?.toString() ?? null]);

describe('tracing off: nothing changes on the wire', () => {
  it('a clean record keeps the raw traceparent byte for byte (the pipeline has no tracing by default)', async () => {
    const kafka = new FakeKafka();
    const p = await started(kafka);
    const raw = [h('traceparent', TRACEPARENT), h('tracestate', 'v=1'), h('n', null)];
    await kafka.handler!(batch([rec(0, '{"email":"a@b.c"}', raw)]), beat);
    expect(text(kafka.committed[0]!.headers).slice(0, 3)).toEqual(text(raw));
    expect(kafka.committed[0]!.headers[0]).toBe(raw[0]);
    await p.stop();
  });

  it("the gateway forwards the caller's traceparent untouched when off, and its own in its place when on", () => {
    const req = {
      socket: { remoteAddress: '10.0.0.9' },
      rawHeaders: ['Traceparent', TRACEPARENT, 'tracestate', 'c=1', 'x-app', '1'],
    } as unknown as IncomingMessage;
    const options = {
      drop: new Set<string>(),
      forwardAuthorization: false,
      upstreamHost: 'app',
      host: 'gw',
      proto: 'http' as const,
      trusted: new TrustedProxies([]),
    };
    const pairs = (out: string[]) => out.flatMap((v, i) => (i % 2 === 0 ? [[v.toLowerCase(), out[i + 1]]] : []));
    const off = pairs(forwardHeaders(req, options));
    expect(off.filter(([k]) => k === 'traceparent')).toEqual([['traceparent', TRACEPARENT]]);
    const mine = `00-${PRODUCER_TRACE}-1111111111111111-01`;
    const on = pairs(forwardHeaders(req, { ...options, traceparent: mine }));
    expect(on.filter(([k]) => k === 'traceparent')).toEqual([['traceparent', mine]]);
    expect(on.filter(([k]) => k === 'tracestate')).toEqual([['tracestate', 'c=1']]);
  });
});

describe("tracing on: the pipeline's transactions and records", () => {
  it("an aborted transaction ends its spans as errors; the retry's record span is new; a dead letter keeps the raw traceparent", async () => {
    const receiver = await startOtlpReceiver();
    const tracing = await openTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }, { serviceName: 'veil-unit' });
    const kafka = new FakeKafka();
    const p = await started(kafka, tracing);
    try {
      const records = [
        rec(0, '{"email":"a@b.c"}', [h('traceparent', TRACEPARENT)]),
        rec(1, '{oops', [h('traceparent', TRACEPARENT)]),
        rec(2, '{"email":"d@e.f"}', []),
      ];
      kafka.failNextCommit = { landed: false };
      await expect(kafka.handler!(batch(records), beat)).rejects.toMatchObject({ code: 'TRANSACTION_ABORTED' });
      await kafka.handler!(batch(records), beat);
      const [clean, dead, untraced] = kafka.committed;
      expect(headerValue(dead!.headers, 'traceparent')!.toString()).toBe(TRACEPARENT);
      expect(headerValue(untraced!.headers, 'traceparent')).toBeUndefined();
      const cleanParent = headerValue(clean!.headers, 'traceparent')!.toString().split('-');
      await tracing.shutdown();
      const spans = await receiver.until((s) => s.filter((x) => x.name === TRANSACTION_SPAN).length >= 2);
      const [aborted, committed] = spans.filter((s) => s.name === TRANSACTION_SPAN);
      expect(aborted!.attributes).toMatchObject({ 'veil.outcome': 'TRANSACTION_ABORTED', 'veil.records.traced': 2 });
      expect(aborted!.status.code).toBe(2);
      expect(committed!.attributes).toMatchObject({
        'veil.outcome': 'committed',
        'veil.records': 3,
        'veil.records.dead_lettered': 1,
        'veil.records.traced': 2,
      });
      const recordSpans = spans.filter((s) => s.name === RECORD_SPAN);
      expect(recordSpans).toHaveLength(4);
      expect(recordSpans.filter((s) => s.status.code === 2).map((s) => s.attributes['veil.transaction.outcome'])).toEqual([
        'TRANSACTION_ABORTED',
        'TRANSACTION_ABORTED',
      ]);
      const kept = recordSpans.filter((s) => s.links[0]!.spanId === committed!.spanId);
      expect(kept.map((s) => s.attributes['veil.outcome']).sort()).toEqual(['RECORD_MALFORMED', 'clean']);
      expect(kept.every((s) => s.traceId === PRODUCER_TRACE && s.parentSpanId === PRODUCER_SPAN)).toBe(true);
      expect(kept.find((s) => s.attributes['veil.outcome'] === 'clean')!.spanId).toBe(cleanParent[2]);
    } finally {
      await p.stop();
      await tracing.shutdown();
      await receiver.close();
    }
  });
});
