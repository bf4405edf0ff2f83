import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VeilError } from '../../src/engine/index.ts';
import { traceCarrierOf, withTraceparent } from '../../src/observability/kafka-trace.ts';
import { BatchTrace, RECORD_SPAN, REWRAP_RECORD_SPAN, REWRAP_TRANSACTION_SPAN, TRANSACTION_SPAN } from '../../src/observability/stream-trace.ts';
import { openTracing, SpanKind, TRACING_OFF, type Tracing } from '../../src/observability/tracing.ts';
import { tracingSettings } from '../../src/observability/tracing-settings.ts';
import { httpErrorType } from '../../src/observability/span-attributes.ts';
import { ROOT } from '../helpers/processes.ts';
import { startOtlpReceiver, type OtlpReceiver } from './otlp-receiver.ts';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const PARENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${PARENT_TRACE}-${PARENT_SPAN}-01`;
const h = (key: string, value: string | null) => ({ key, value: value === null ? null : Buffer.from(value) });

describe('tracing settings: off unless configured', () => {
  it('is off without an OTLP endpoint, and when disabled or exporter none', () => {
    expect(tracingSettings({}, 'veil-x')).toBeUndefined();
    expect(tracingSettings({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }, 'veil-x')).toBeUndefined();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }, 'veil-x')).toBeUndefined();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }, 'veil-x')).toBeUndefined();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, 'veil-x')).toBeUndefined();
  });

  it('appends /v1/traces to the base endpoint and takes the traces endpoint as given', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }, 'veil-x')!.url).toBe('http://collector:4318/v1/traces');
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c/otel' }, 'veil-x')!.url).toBe('https://c/otel/v1/traces');
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:1', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:2/custom' }, 'veil-x')!.url).toBe(
      'http://b:2/custom',
    );
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' }, 'veil-x')!.url).toBe('http://localhost:4318/v1/traces');
  });

  it('names the service from OTEL_SERVICE_NAME, else the resource attributes, else the process', () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(tracingSettings(env, 'veil-serve')!.serviceName).toBe('veil-serve');
    const attrs = { ...env, OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs,deployment.environment=prod%20eu,bad' };
    expect(tracingSettings(attrs, 'veil-serve')).toMatchObject({ serviceName: 'from-attrs', resource: { 'deployment.environment': 'prod eu' } });
    expect(tracingSettings(attrs, 'veil-serve')!.resource).not.toHaveProperty('service.name');
    expect(tracingSettings({ ...attrs, OTEL_SERVICE_NAME: 'mine' }, 'veil-serve')!.serviceName).toBe('mine');
  });

  it('reads the sampler: parent-based always on by default', () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(tracingSettings(env, 'v')!.sampler).toEqual({ root: 'always_on', parentBased: true, ratio: 1 });
    expect(tracingSettings({ ...env, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }, 'v')!.sampler).toEqual({
      root: 'traceidratio',
      parentBased: false,
      ratio: 0.25,
    });
  });

  it('refuses what it cannot honour, without echoing an endpoint (CONFIG_INVALID)', () => {
    const secretUrl = 'grpc://user:hunter2@collector:4317';
    const refusals = [
      { OTEL_EXPORTER_OTLP_ENDPOINT: secretUrl },
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url hunter2' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'zipkin' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'jaeger_remote' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' },
    ];
    for (const env of refusals) {
      let error: unknown;
      try {
        tracingSettings(env, 'v');
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(env)).toBeInstanceOf(VeilError);
      expect((error as VeilError).code).toBe('CONFIG_INVALID');
      expect((error as VeilError).message).not.toContain('hunter2');
    }
  });
});

describe('openTracing', () => {
  it('is the inert TRACING_OFF when not configured: no span, no header, nothing to flush', async () => {
    const tracing = await openTracing({}, { serviceName: 'veil-test' });
    expect(tracing).toBe(TRACING_OFF);
    expect(tracing.enabled).toBe(false);
    expect(tracing.remote({ traceparent: TRACEPARENT })).toBeUndefined();
    const span = tracing.start('x', { kind: SpanKind.SERVER });
    expect(span.isRecording()).toBe(false);
    expect(tracing.traceparent(span)).toBe('');
    await tracing.shutdown();
  });
});

describe('tracing on: spans exported over OTLP/HTTP protobuf', () => {
  let receiver: OtlpReceiver;
  let tracing: Tracing;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    tracing = await openTracing(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test' },
      { serviceName: 'veil-unit' },
    );
  });
  afterAll(async () => {
    await tracing?.shutdown();
    await receiver?.close();
  });

  it('continues a remote parent, names its span in the traceparent it gives, and flushes on shutdown', async () => {
    expect(tracing.enabled).toBe(true);
    expect(tracing.remote({})).toBeUndefined();
    expect(tracing.remote({ traceparent: 'garbage' })).toBeUndefined();
    const parent = tracing.remote({ traceparent: TRACEPARENT, tracestate: 'vendor=1' });
    expect(parent).toBeDefined();
    const span = tracing.start('unit span', { kind: SpanKind.SERVER, parent, attributes: { 'veil.values': 3 } });
    const next = tracing.traceparent(span);
    expect(next).toMatch(new RegExp(`^00-${PARENT_TRACE}-[0-9a-f]{16}-01$`));
    expect(next.split('-')[2]).toBe(span.spanContext().spanId);
    span.end();
    const root = tracing.start('unit root', { kind: SpanKind.INTERNAL });
    root.end();
    await tracing.shutdown();
    const spans = await receiver.until((s) => s.length >= 2);
    const child = spans.find((s) => s.name === 'unit span')!;
    expect(child).toMatchObject({ traceId: PARENT_TRACE, parentSpanId: PARENT_SPAN, traceState: 'vendor=1', kind: 2, attributes: { 'veil.values': 3 } });
    expect(child.resource).toMatchObject({ 'service.name': 'veil-unit', 'deployment.environment': 'test' });
    expect(spans.find((s) => s.name === 'unit root')!.parentSpanId).toBe('');
    expect(receiver.strays).toEqual([]);
  });
});

describe("the resource's service.instance.id: one random UUID per process", () => {
  /** the service.instance.id of a span exported by a tracing opened in this process with `env` */
  async function instanceId(receiver: OtlpReceiver, env: Record<string, string>, name: string): Promise<string> {
    const tracing = await openTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, ...env }, { serviceName: 'veil-unit' });
    tracing.start(name, { kind: SpanKind.INTERNAL }).end();
    await tracing.shutdown();
    const span = (await receiver.until((s) => s.some((x) => x.name === name))).find((s) => s.name === name)!;
    return span.resource['service.instance.id'] as string;
  }

  it('is shared by every tracer of a process, differs in another process, and OTEL_RESOURCE_ATTRIBUTES may set it', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const first = await instanceId(receiver, {}, 'first');
      expect(first).toMatch(UUID_V4);
      expect(await instanceId(receiver, {}, 'second')).toBe(first);
      expect(await instanceId(receiver, { OTEL_RESOURCE_ATTRIBUTES: 'service.instance.id=pod-7' }, 'given')).toBe('pod-7');
      // another process: the same code, its own id
      const script = `const { openTracing, SpanKind } = await import(${JSON.stringify(`${ROOT}src/observability/tracing.ts`)});
        const t = await openTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: ${JSON.stringify(receiver.endpoint)} }, { serviceName: 'veil-unit' });
        t.start('other process', { kind: SpanKind.INTERNAL }).end(); await t.shutdown();`;
      await promisify(execFile)(`${ROOT}scripts/node22`, ['--input-type=module', '-e', script], { timeout: 60_000 });
      const other = (await receiver.until((s) => s.some((x) => x.name === 'other process'))).find((s) => s.name === 'other process')!;
      expect(other.resource['service.instance.id']).toMatch(UUID_V4);
      expect(other.resource['service.instance.id']).not.toBe(first);
    } finally {
      await receiver.close();
    }
  }, 90_000);
});

describe('error.type of an HTTP server span', () => {
  it('is set on a 5xx only: the veil error code the caller got, else the status; never a message', () => {
    expect(httpErrorType(200, undefined)).toBeUndefined();
    expect(httpErrorType(403, 'ACTION_NOT_GRANTED')).toBeUndefined();
    expect(httpErrorType(503, 'AUDIT_UNAVAILABLE')).toBe('AUDIT_UNAVAILABLE');
    expect(httpErrorType(500, 'INTERNAL')).toBe('INTERNAL');
    expect(httpErrorType(502, undefined)).toBe('502');
    expect(httpErrorType(500, 'audit sink unavailable: alice@example.com')).toBe('500');
  });
});

describe('Kafka headers: the W3C trace context of a record', () => {
  it('takes exactly one traceparent (absent, null or repeated: none) and the first tracestate', () => {
    expect(traceCarrierOf([])).toBeUndefined();
    expect(traceCarrierOf([h('trace', 't-1')])).toBeUndefined();
    expect(traceCarrierOf([h('traceparent', null)])).toBeUndefined();
    expect(traceCarrierOf([h('traceparent', TRACEPARENT), h('traceparent', TRACEPARENT)])).toBeUndefined();
    expect(traceCarrierOf([h('tracestate', 'a=1'), h('x', 'y'), h('traceparent', TRACEPARENT), h('tracestate', 'b=2')])).toEqual({
      traceparent: TRACEPARENT,
      tracestate: 'a=1',
    });
  });

  it('replaces the traceparent value in its place; every other header stays, in order', () => {
    const headers = [h('a', '1'), h('traceparent', TRACEPARENT), h('n', null), h('a', '2'), h('tracestate', 'v=1')];
    const out = withTraceparent(headers, 'NEW');
    expect(out.map((x) => [x.key, x.value?.toString() ?? null])).toEqual([
      ['a', '1'],
      ['traceparent', 'NEW'],
      ['n', null],
      ['a', '2'],
      ['tracestate', 'v=1'],
    ]);
    expect(out[0]).toBe(headers[0]);
    expect(out[4]).toBe(headers[4]);
  });
});

describe('BatchTrace: the spans of one stream transaction', () => {
  it('gives a traced record a child span of the producer, linked to the transaction, named by the clean record; others untouched', async () => {
    const receiver = await startOtlpReceiver();
    const tracing = await openTracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.endpoint}/v1/traces` }, { serviceName: 'veil-unit' });
    try {
      const trace = new BatchTrace(tracing, {
        pipeline: 'customers',
        topic: 'raw.c',
        partition: 1,
        group: 'g',
        configVersion: 'abc123',
        delivery: 'exactly-once',
        fetched: 3,
      });
      const untraced = { topic: 'clean.c', headers: Object.freeze([h('veil.pipeline', 'customers')]) };
      expect(trace.record({ offset: '7', headers: [] }, untraced, undefined)).toBe(untraced);
      const invalid = { topic: 'clean.c', headers: [h('traceparent', 'nonsense')] };
      expect(trace.record({ offset: '8', headers: invalid.headers }, invalid, undefined)).toBe(invalid);
      const rawHeaders = [h('traceparent', TRACEPARENT), h('k', 'v')];
      const clean = trace.record(
        { offset: '9', headers: rawHeaders },
        { topic: 'clean.c', headers: [...rawHeaders, h('veil.pipeline', 'customers')] },
        undefined,
      );
      const dead = { topic: 'dlq.c', headers: rawHeaders };
      expect(trace.record({ offset: '10', headers: rawHeaders }, dead, 'RECORD_MALFORMED')).toBe(dead);
      trace.end({ outcome: 'committed', records: 2, deadLettered: 1 });
      await tracing.shutdown();
      const spans = await receiver.until((s) => s.length >= 3);
      const tx = spans.find((s) => s.name === TRANSACTION_SPAN)!;
      const records = spans.filter((s) => s.name === RECORD_SPAN);
      expect(tx).toMatchObject({
        parentSpanId: '',
        kind: 5,
        attributes: {
          'veil.pipeline': 'customers',
          'veil.config.version': 'abc123',
          'veil.outcome': 'committed',
          'veil.records': 2,
          'veil.records.dead_lettered': 1,
          'veil.records.traced': 2,
          'messaging.destination.name': 'raw.c',
          'messaging.batch.message_count': 3,
        },
      });
      expect(records).toHaveLength(2);
      for (const r of records) {
        expect(r).toMatchObject({ traceId: PARENT_TRACE, parentSpanId: PARENT_SPAN, links: [{ traceId: tx.traceId, spanId: tx.spanId }] });
      }
      const cleanSpan = records.find((r) => r.attributes['veil.outcome'] === 'clean')!;
      expect(cleanSpan.attributes['messaging.kafka.offset']).toBe(9);
      expect(records.find((r) => r.attributes['veil.outcome'] === 'RECORD_MALFORMED')!.attributes['messaging.kafka.offset']).toBe(10);
      expect(clean.headers.map((x) => x.key)).toEqual(['traceparent', 'k', 'veil.pipeline']);
      expect(clean.headers[0]!.value!.toString()).toBe(`00-${PARENT_TRACE}-${cleanSpan.spanId}-01`);
    } finally {
      await tracing.shutdown();
      await receiver.close();
    }
  });

  it("names veil stream rewrap's spans for what it does", async () => {
    const receiver = await startOtlpReceiver();
    const tracing = await openTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }, { serviceName: 'veil-unit' });
    try {
      const trace = new BatchTrace(tracing, {
        pipeline: 'customers',
        topic: 'clean.c',
        partition: 0,
        group: 'g',
        configVersion: 'v',
        delivery: 'exactly-once',
        fetched: 1,
        rewrap: true,
      });
      trace.record({ offset: '0', headers: [h('traceparent', TRACEPARENT)] }, { headers: [h('traceparent', TRACEPARENT)] }, undefined);
      trace.end({ outcome: 'committed', records: 1, deadLettered: 0 });
      await tracing.shutdown();
      const spans = await receiver.until((s) => s.length >= 2);
      expect(spans.map((s) => s.name).sort()).toEqual([REWRAP_RECORD_SPAN, REWRAP_TRANSACTION_SPAN]);
      expect(spans.every((s) => s.attributes['messaging.operation.name'] === 'rewrap')).toBe(true);
    } finally {
      await tracing.shutdown();
      await receiver.close();
    }
  });
});
