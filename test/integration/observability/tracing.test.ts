import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../helpers/memory-audit-sink.ts';
import { openGateway, type OpenedGateway } from '../../../src/app/open-gateway.ts';
import { openResponders, type Responders } from '../../../src/app/open-responders.ts';
import { openService, type Service } from '../../../src/app/open-service.ts';
import { openStream, type StreamService } from '../../../src/app/open-stream.ts';
import { RECORD_SPAN, TRANSACTION_SPAN } from '../../../src/observability/stream-trace.ts';
import { REQUEST_SPAN } from '../../../src/stream/unprotect/index.ts';
import { TRANSFORM_SPAN } from '../../../src/http/routes/transform-trace.ts';
import { body } from '../../helpers/engine-fixture.ts';
import { BROKERS, consume, createTopics, javaConsumeHeaders, kafkaClient, produce, topicsFor } from '../../helpers/kafka.ts';
import { pipelineYaml } from '../../helpers/stream.ts';
import { exportedText, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../observability/otlp-receiver.ts';

/** Cleartext that must appear in no exported span (names, attributes, events, links, resource) nor anywhere in the OTLP bytes. */
const SECRET_EMAIL = `zz-trace-secret-${randomBytes(3).toString('hex')}@example.org`;
const STREAM_EMAIL = `zz-trace-record-${randomBytes(3).toString('hex')}@example.org`;
const GATEWAY_EMAIL = `zz-trace-gateway-${randomBytes(3).toString('hex')}@example.org`;
/** the message of an error thrown while serving a call: a span names its code, never this */
const THROWN_MESSAGE = `zz-trace-thrown-${randomBytes(3).toString('hex')}`;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A caller's W3C trace context: a fresh trace id and span id per door. */
function callerContext(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

const parentOf = (traceparent: string) => ({ traceId: traceparent.split('-')[1], spanId: traceparent.split('-')[2] });
const quiet = () => new Writable({ write: (_c, _e, cb) => cb() });

describe('traces over OTLP: /transform, stream protect, the unprotect responder and the gateway (real broker)', () => {
  const t = topicsFor('tracing');
  const requests = `${t.raw}.requests`;
  const replies = `${t.raw}.replies`;
  const refused = `${t.raw}.refused`;
  const kafka = kafkaClient();
  let receiver: OtlpReceiver;
  let dataDir: string;
  let configFile: string;
  let env: Record<string, string>;
  let service: Service;
  let url: string;
  let token: string;
  let protectedEmail: string;
  let upstream: Server;
  const upstreamSeen: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    upstream = createServer((req, res) => {
      upstreamSeen.push(req.headers);
      req.resume();
      // the application's own failure, which the gateway forwards
      req.on('end', () => res.writeHead(req.headers['x-test-fail'] ? 503 : 201, { 'content-type': 'application/json' }).end('{"ok":true}'));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const upstreamPort = (upstream.address() as { port: number }).port;
    dataDir = await mkdtemp(join(tmpdir(), 'veil-tracing-'));
    configFile = join(dataDir, 'config.yaml');
    await writeFile(
      configFile,
      pipelineYaml(
        t,
        'json',
        `responders:
  desk:
    requestTopic: ${requests}
    replyTopics: [${replies}]
    deadLetterTopic: ${refused}
    groupId: veil-test-desk-${t.id}
gateway:
  upstream: http://127.0.0.1:${upstreamPort}
  routes:
    - name: create-customer
      method: POST
      path: /customers
      request:
        - { select: email, field: Customer.email }
`,
      ),
    );
    await createTopics(kafka, [t.raw, t.clean, t.dlq, requests, replies, refused], 1);
    env = {
      VEIL_MASTER_KEY: 'a'.repeat(64),
      VEIL_BASE_URL: 'http://veil.test',
      VEIL_LOG_LEVEL: 'error',
      VEIL_PROTECT_THREADS: '1',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    };
    service = await openService({
      configFile,
      dataDir,
      env,
      now: () => new Date(),
      baseUrl: 'http://veil.test',
      development: true,
      audit: new MemoryAuditSink(),
      logDestination: quiet(),
      logLevel: 'error',
    });
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(service.app.server.address() as { port: number }).port}`;
    const res = await fetch(`${url}/connect/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: service.devClient!.secret }),
    });
    token = ((await res.json()) as { access_token: string }).access_token;
  }, 120_000);

  afterAll(async () => {
    await service?.app.close();
    await new Promise((resolve) => upstream?.close(resolve));
    await receiver?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const transform = (payload: unknown, headers: Record<string, string>) =>
    fetch(`${url}/transform`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(payload),
    });

  it("POST /transform: the span continues the caller's traceparent, names the version and counts, and holds no value", async () => {
    const caller = callerContext();
    const protect = await transform(body({ roles: ['support'], action: 'Protect', instances: [['email', SECRET_EMAIL]] }), {
      traceparent: caller.traceparent,
      tracestate: 'caller=1',
    });
    expect(protect.status).toBe(200);
    protectedEmail = ((await protect.json()) as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances[0]!.value;
    // the reveal puts the cleartext in a response: it must not reach a span either
    const reveal = await transform(body({ roles: ['support'], action: 'Unprotect', instances: [['email', protectedEmail]] }), {
      traceparent: caller.traceparent,
    });
    expect(await reveal.text()).toContain(SECRET_EMAIL);
    const refusedCall = await transform(body({ roles: ['support'], action: 'Unprotect', instances: [['cardNumber', 'x']] }), {});
    expect(refusedCall.status).toBe(403);
    // refused before the handler runs (the body is not JSON): the span names the code the caller got
    const malformed = await fetch(`${url}/transform`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', traceparent: callerContext().traceparent },
      body: `{"email": "${SECRET_EMAIL}"`,
    });
    expect(((await malformed.json()) as { code: string }).code).toBe('REQUEST_MALFORMED');

    const spans = await receiver.until((s) => s.filter((x) => x.name === TRANSFORM_SPAN).length >= 4);
    const [protectSpan, revealSpan] = spans.filter((s) => s.name === TRANSFORM_SPAN && s.traceId === caller.traceId);
    expect(protectSpan).toMatchObject({
      parentSpanId: caller.spanId,
      traceState: 'caller=1',
      kind: 2,
      attributes: {
        'http.request.method': 'POST',
        'http.route': '/transform',
        'url.scheme': 'http',
        'url.path': '/transform',
        'http.response.status_code': 200,
        'veil.outcome': 'ok',
        'veil.config.version': service.holder.get().config.version,
        'veil.requests': 1,
        'veil.values': 1,
        'veil.fields': 1,
        'veil.actions': ['Protect'],
      },
      resource: { 'service.name': 'veil-serve' },
    });
    expect(protectSpan!.resource['service.instance.id']).toMatch(UUID_V4);
    expect(revealSpan!.attributes).toMatchObject({ 'veil.outcome': 'ok', 'veil.actions': ['Unprotect'] });
    const refusedSpan = spans.find((s) => s.name === TRANSFORM_SPAN && s.parentSpanId === '')!;
    expect(refusedSpan.attributes).toMatchObject({ 'veil.outcome': 'ACTION_NOT_GRANTED', 'http.response.status_code': 403 });
    expect(refusedSpan.status.code).toBe(0);
    const malformedSpan = spans.find((s) => s.name === TRANSFORM_SPAN && s.attributes['http.response.status_code'] === 400)!;
    expect(malformedSpan.attributes).toMatchObject({ 'veil.outcome': 'REQUEST_MALFORMED' });
    expect(malformedSpan.parentSpanId).not.toBe('');
    // a 4xx is the caller's error, not the server's: no error.type
    for (const s of [protectSpan!, revealSpan!, refusedSpan, malformedSpan]) expect(s.attributes).not.toHaveProperty('error.type');
  });

  it('POST /transform failing on the server (5xx): error.type is the code the caller got, for a refusal and for a thrown error, never a message', async () => {
    const audit = service.audit as MemoryAuditSink;
    const unaudited = callerContext();
    audit.failing = true;
    try {
      const res = await transform(body({ roles: ['support'], action: 'Unprotect', instances: [['email', protectedEmail]] }), {
        traceparent: unaudited.traceparent,
      });
      expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([503, 'AUDIT_UNAVAILABLE']);
    } finally {
      audit.failing = false;
    }
    // the engine source throwing a plain Error: a bug, answered 500 INTERNAL by the server's error handler
    const thrown = callerContext();
    service.holder.current = () => {
      throw new TypeError(THROWN_MESSAGE);
    };
    try {
      const res = await transform(body({ roles: ['support'], action: 'Protect', instances: [['email', SECRET_EMAIL]] }), { traceparent: thrown.traceparent });
      expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([500, 'INTERNAL']);
    } finally {
      delete (service.holder as { current?: unknown }).current;
    }
    const spans = await receiver.until((s) => [unaudited, thrown].every((c) => s.some((x) => x.name === TRANSFORM_SPAN && x.traceId === c.traceId)));
    const of = (c: { traceId: string }) => spans.find((s) => s.name === TRANSFORM_SPAN && s.traceId === c.traceId)!;
    expect(of(unaudited)).toMatchObject({
      status: { code: 2 },
      attributes: { 'http.response.status_code': 503, 'veil.outcome': 'AUDIT_UNAVAILABLE', 'error.type': 'AUDIT_UNAVAILABLE', 'url.path': '/transform' },
    });
    expect(of(thrown)).toMatchObject({
      status: { code: 2 },
      attributes: { 'http.response.status_code': 500, 'veil.outcome': 'INTERNAL', 'error.type': 'INTERNAL' },
    });
    expect(exportedText(of(thrown)).some((t) => t.includes(THROWN_MESSAGE) || t.includes('TypeError'))).toBe(false);
  });

  it("stream protect: the record's span is a child of the producer's, the clean record's traceparent names it; an untraced record's headers stay as they were", async () => {
    const producer = callerContext();
    const traced = { id: 'c-traced', email: STREAM_EMAIL, note: 'n' };
    const untraced = { id: 'c-untraced', email: `u-${STREAM_EMAIL}`, note: 'n' };
    const stream: StreamService = await openStream({ configFile, dataDir, env, now: () => new Date(), brokers: BROKERS, development: true });
    try {
      await stream.start();
      await produce(kafka, t.raw, [
        { key: traced.email, value: JSON.stringify(traced), headers: { traceparent: producer.traceparent, tracestate: 'producer=7', 'app-header': 'a1' } },
        { key: untraced.email, value: JSON.stringify(untraced), headers: { 'app-header': 'a2', tracestate: 'orphan=1' } },
      ]);
      expect(await consume(kafka, t.clean, 2)).toHaveLength(2);
    } finally {
      await stream.stop();
    }
    const clean = await javaConsumeHeaders(t.clean);
    const byId = (id: string) => clean.find((r) => JSON.parse(r.value.toString()).id === id)!;
    const text = (headers: { key: string; value: Buffer | null }[]) => headers.map((h) => [h.key, h.value?.toString() ?? null]);
    const version = service.holder.get().config.version;
    // no traceparent: the raw headers byte for byte, then veil's own, as without tracing
    expect(text(byId('c-untraced').headers)).toEqual([
      ['app-header', 'a2'],
      ['tracestate', 'orphan=1'],
      ['veil.pipeline', 'customers'],
      ['veil.config.version', version],
      ['veil.protected.fields', 'email,(key)'],
    ]);
    const tracedHeaders = text(byId('c-traced').headers);
    expect(tracedHeaders.map(([k]) => k)).toEqual(['traceparent', 'tracestate', 'app-header', 'veil.pipeline', 'veil.config.version', 'veil.protected.fields']);
    expect(tracedHeaders[1]).toEqual(['tracestate', 'producer=7']);
    const cleanParent = parentOf(tracedHeaders[0]![1]!);
    expect(cleanParent.traceId).toBe(producer.traceId);

    const spans = await receiver.until(
      (s) => s.some((x) => x.name === RECORD_SPAN) && s.some((x) => x.name === TRANSACTION_SPAN && x.attributes['veil.records.traced'] === 1),
    );
    const record = spans.find((s) => s.name === RECORD_SPAN)!;
    expect(spans.filter((s) => s.name === RECORD_SPAN)).toHaveLength(1);
    expect(record).toMatchObject({ traceId: producer.traceId, parentSpanId: producer.spanId, spanId: cleanParent.spanId, traceState: 'producer=7', kind: 5 });
    expect(record.attributes).toMatchObject({
      'veil.pipeline': 'customers',
      'veil.outcome': 'clean',
      'veil.config.version': version,
      'veil.transaction.outcome': 'committed',
      'messaging.destination.name': t.raw,
    });
    const tx = spans.find((s) => s.name === TRANSACTION_SPAN && s.attributes['veil.records.traced'] === 1)!;
    expect(record.links).toEqual([expect.objectContaining({ traceId: tx.traceId, spanId: tx.spanId })]);
    expect(tx).toMatchObject({ parentSpanId: '', resource: { 'service.name': 'veil-stream' } });
    expect(tx.attributes).toMatchObject({
      'veil.outcome': 'committed',
      'veil.records': 2,
      'veil.records.clean': 2,
      'veil.records.dead_lettered': 0,
      'veil.delivery': 'exactly-once',
      'messaging.consumer.group.name': `veil-test-${t.id}`,
    });
  }, 120_000);

  it("unprotect over Kafka: the request's span continues its traceparent and the reply's traceparent names it", async () => {
    const requester = callerContext();
    const responders: Responders = await openResponders({
      configFile,
      dataDir,
      env,
      now: () => new Date(),
      brokers: BROKERS,
      development: false,
      audit: new MemoryAuditSink(),
    });
    let reply;
    try {
      await responders.start();
      await produce(kafka, requests, [
        {
          key: 'r-1',
          value: JSON.stringify(body({ roles: ['support'], action: 'Unprotect', instances: [['email', protectedEmail]] })),
          headers: { authorization: `Bearer ${token}`, 'correlation-id': 'trace-1', 'reply-to': replies, traceparent: requester.traceparent },
        },
      ]);
      [reply] = await consume(kafka, replies, 1);
    } finally {
      await responders.stop();
    }
    expect(reply!.headers['veil.status']).toBe('200');
    expect(reply!.value!.toString()).toContain(SECRET_EMAIL);
    const replyParent = parentOf(reply!.headers.traceparent!);
    const spans = await receiver.until((s) => s.some((x) => x.name === REQUEST_SPAN));
    const span = spans.find((s) => s.name === REQUEST_SPAN)!;
    expect(span).toMatchObject({
      traceId: requester.traceId,
      parentSpanId: requester.spanId,
      spanId: replyParent.spanId,
      kind: 5,
      resource: { 'service.name': 'veil-unprotect' },
    });
    expect(replyParent.traceId).toBe(requester.traceId);
    expect(span.attributes).toMatchObject({
      'veil.responder': 'desk',
      'veil.outcome': 'ok',
      'veil.values': 1,
      'http.response.status_code': 200,
      'veil.config.version': service.holder.get().config.version,
    });
  }, 120_000);

  it("gateway: the exchange's span continues the caller's traceparent and the upstream gets one naming it", async () => {
    const caller = callerContext();
    const failing = callerContext();
    const gateway: OpenedGateway = await openGateway({
      configFile,
      dataDir,
      env,
      now: () => new Date(),
      issuer: 'http://veil.test',
      development: false,
      logDestination: quiet(),
      logLevel: 'error',
    });
    try {
      await new Promise<void>((resolve) => gateway.server.listen(0, '127.0.0.1', resolve));
      const port = (gateway.server.address() as { port: number }).port;
      const res = await fetch(`http://127.0.0.1:${port}/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', traceparent: caller.traceparent, tracestate: 'caller=2' },
        body: JSON.stringify({ email: GATEWAY_EMAIL, note: 'n' }),
      });
      expect(res.status).toBe(201);
      await res.text();
      const failed = await fetch(`http://127.0.0.1:${port}/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', traceparent: failing.traceparent, 'x-test-fail': '1' },
        body: JSON.stringify({ email: GATEWAY_EMAIL, note: 'n' }),
      });
      expect(failed.status).toBe(503);
      await failed.text();
    } finally {
      await gateway.drain(1000);
    }
    const seen = upstreamSeen.at(-2)!;
    expect(seen.tracestate).toBe('caller=2');
    const forwarded = parentOf(seen.traceparent as string);
    expect(forwarded.traceId).toBe(caller.traceId);
    const spans = await receiver.until((s) => s.filter((x) => x.resource['service.name'] === 'veil-gateway').length >= 2);
    const span = spans.find((s) => s.resource['service.name'] === 'veil-gateway' && s.traceId === caller.traceId)!;
    expect(span).toMatchObject({ name: 'POST create-customer', traceId: caller.traceId, parentSpanId: caller.spanId, spanId: forwarded.spanId, kind: 2 });
    expect(span.attributes).toMatchObject({
      'veil.route': 'create-customer',
      'veil.outcome': 'forwarded',
      'http.response.status_code': 201,
      'url.scheme': 'http',
      'veil.values.request': 1,
      'veil.config.version': service.holder.get().config.version,
    });
    // no url.path at the gateway: an application's path may hold identifiers; the route's name stands for it
    expect(span.attributes).not.toHaveProperty('url.path');
    expect(span.attributes).not.toHaveProperty('error.type');
    // the application's own 503, forwarded: error.type is its status
    const failedSpan = spans.find((s) => s.resource['service.name'] === 'veil-gateway' && s.traceId === failing.traceId)!;
    expect(failedSpan).toMatchObject({
      status: { code: 2 },
      attributes: { 'veil.outcome': 'forwarded', 'http.response.status_code': 503, 'error.type': '503' },
    });
  }, 120_000);

  it('no exported span, and no byte the exporters sent, holds a value, a token or a secret', async () => {
    await service.app.close();
    const spans: ReceivedSpan[] = receiver.spans;
    expect(new Set(spans.map((s) => s.resource['service.name']))).toEqual(new Set(['veil-serve', 'veil-stream', 'veil-unprotect', 'veil-gateway']));
    // one process here: one service.instance.id for all four services
    expect(new Set(spans.map((s) => s.resource['service.instance.id'])).size).toBe(1);
    const secrets = [
      THROWN_MESSAGE,
      SECRET_EMAIL,
      STREAM_EMAIL,
      `u-${STREAM_EMAIL}`,
      GATEWAY_EMAIL,
      protectedEmail,
      token,
      token.split('.')[2]!,
      service.devClient!.secret,
      env.VEIL_MASTER_KEY!,
    ];
    for (const span of spans) {
      const texts = exportedText(span);
      for (const secret of secrets)
        expect(
          texts.find((x) => x.includes(secret)),
          `${span.name} holds a secret`,
        ).toBeUndefined();
    }
    const wire = Buffer.concat(receiver.bodies);
    for (const secret of secrets) expect(wire.includes(Buffer.from(secret)), `OTLP bytes hold ${secret.slice(0, 8)}…`).toBe(false);
    expect(receiver.strays).toEqual([]);
  });
});
