import { createServer, type Server } from 'node:http';
import protobuf from 'protobufjs';

/**
 * The part of the OTLP trace protocol (opentelemetry-proto, collector/trace/v1 and trace/v1,
 * common/v1, resource/v1) a receiver needs to read what veil exports: field numbers as in the
 * published .proto files. The exporter's own serializer is hand-written, so the test decodes with
 * a second implementation (protobufjs) rather than trusting it to read itself.
 */
const OTLP_TRACE_PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4; fixed32 flags = 16;
  string name = 5; int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9; uint32 dropped_attributes_count = 10;
  repeated Event events = 11; uint32 dropped_events_count = 12;
  repeated Link links = 13; uint32 dropped_links_count = 14; Status status = 15;
  message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
  message Link { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; repeated KeyValue attributes = 4; uint32 dropped_attributes_count = 5; fixed32 flags = 6; }
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7; }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
`;

const REQUEST = protobuf.parse(OTLP_TRACE_PROTO).root.lookupType('otlp.ExportTraceServiceRequest');

export type AttributeValue = string | number | boolean | AttributeValue[] | null;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span */
  parentSpanId: string;
  traceState: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer */
  kind: number;
  attributes: Record<string, AttributeValue>;
  events: { name: string; attributes: Record<string, AttributeValue> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, AttributeValue> }[];
  status: { code: number; message: string };
  resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  /** the base endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT takes it */
  endpoint: string;
  spans: ReceivedSpan[];
  /** every request body as it arrived (protobuf bytes), for byte searches */
  bodies: Buffer[];
  /** requests to paths other than /v1/traces or not protobuf */
  strays: string[];
  /** resolves once `predicate` holds for the spans received (or rejects at timeoutMs) */
  until(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

/** An OTLP/HTTP traces receiver on 127.0.0.1 and an ephemeral port: it decodes and keeps every span sent. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: Buffer[] = [];
  const strays: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.method !== 'POST' || req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/x-protobuf') {
        strays.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
        res.writeHead(404).end();
        return;
      }
      bodies.push(body);
      spans.push(...decode(body));
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    strays,
    async until(predicate, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(spans)) {
        if (Date.now() > deadline) throw new Error(`OTLP receiver: condition not met within ${timeoutMs} ms; spans: ${spans.map((s) => s.name).join(', ')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      return spans;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

interface Decoded {
  resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: DecodedSpan[] }[] }[];
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | { toNumber(): number };
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
  bytesValue?: Uint8Array;
}
interface DecodedSpan {
  traceId: Uint8Array;
  spanId: Uint8Array;
  parentSpanId?: Uint8Array;
  traceState?: string;
  name: string;
  kind?: number;
  attributes?: KeyValue[];
  events?: { name: string; attributes?: KeyValue[] }[];
  links?: { traceId: Uint8Array; spanId: Uint8Array; attributes?: KeyValue[] }[];
  status?: { code?: number; message?: string };
}

function decode(body: Buffer): ReceivedSpan[] {
  const request = REQUEST.toObject(REQUEST.decode(body), { defaults: false }) as Decoded;
  const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString('hex');
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const resource = attributesOf(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s): ReceivedSpan => ({
        traceId: hex(s.traceId),
        spanId: hex(s.spanId),
        parentSpanId: hex(s.parentSpanId),
        traceState: s.traceState ?? '',
        name: s.name,
        kind: s.kind ?? 0,
        attributes: attributesOf(s.attributes),
        events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
        links: (s.links ?? []).map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId), attributes: attributesOf(l.attributes) })),
        status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
        resource,
      })),
    );
  });
}

function attributesOf(list: KeyValue[] | undefined): Record<string, AttributeValue> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

function valueOf(v: AnyValue | undefined): AttributeValue {
  if (!v) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return typeof v.intValue === 'number' ? v.intValue : v.intValue.toNumber();
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(valueOf);
  if (v.bytesValue !== undefined) return Buffer.from(v.bytesValue).toString('hex');
  return null;
}

/** Every string a span exports — name, attribute keys and values, events, links, status, resource — for "no cleartext" checks. */
export function exportedText(span: ReceivedSpan): string[] {
  const flat = (a: Record<string, AttributeValue>) => Object.entries(a).flatMap(([k, v]) => [k, JSON.stringify(v)]);
  return [
    span.name,
    span.traceState,
    span.status.message,
    ...flat(span.attributes),
    ...flat(span.resource),
    ...span.events.flatMap((e) => [e.name, ...flat(e.attributes)]),
    ...span.links.flatMap((l) => flat(l.attributes)),
  ];
}
