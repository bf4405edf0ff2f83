import { INVALID_SPAN_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Link, type Span } from '@opentelemetry/api';
import { tracingSettings } from './tracing-settings.ts';

export { SpanKind, SpanStatusCode };
export type { Attributes, Context, Link, Span };

/** A W3C trace context as it arrived: the traceparent and tracestate values, when there are any. */
export interface TraceCarrier {
  traceparent?: string | undefined;
  tracestate?: string | undefined;
}

export interface SpanOptions {
  kind: SpanKind;
  /** the remote parent (Tracing.remote); none: the span starts a trace */
  parent?: Context | undefined;
  attributes?: Attributes;
  links?: Link[];
  /** milliseconds since the epoch; default now */
  startTime?: number;
}

/**
 * veil's one door to traces. Every hook asks `enabled` first and does nothing else when it is
 * false, so tracing that is off costs one constant check on the hot path: no span, no header
 * parsed, no allocation. Contexts are passed explicitly (no global provider, propagator or
 * context manager is registered), so several processes' worth of wiring can share one Node.js
 * process in tests. Spans name counts, codes, configuration versions and pipeline or route names:
 * callers never give them a value, key, token or secret.
 */
export interface Tracing {
  readonly enabled: boolean;
  /** The remote parent a W3C trace context names, or undefined when it names none (absent, invalid). */
  remote(carrier: TraceCarrier): Context | undefined;
  start(name: string, options: SpanOptions): Span;
  /** The traceparent value naming `span`, for the next hop (the upstream, a clean record, a reply). */
  traceparent(span: Span): string;
  /** Exports what is buffered and stops (bounded: a collector that does not answer does not hold up a stop). */
  shutdown(): Promise<void>;
}

const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Tracing that is off: hooks check `enabled` and never call the rest, which answers inert values. */
export const TRACING_OFF: Tracing = Object.freeze({
  enabled: false,
  remote: () => undefined,
  start: () => NO_SPAN,
  traceparent: () => '',
  shutdown: () => Promise.resolve(),
});

export interface TracingLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface TracingOptions {
  /** service.name unless OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) names one */
  serviceName: string;
  /** where tracing says it is on (the endpoint's origin) and reports failed exports (an error name and an HTTP status, never a span's content); a pino logger */
  log?: TracingLog;
  /** how long shutdown waits for the last export (default 5000 ms) */
  shutdownTimeoutMs?: number;
}

/**
 * The tracing of a process, from the standard OpenTelemetry environment (tracing-settings.ts):
 * TRACING_OFF unless an OTLP endpoint is configured, else spans batched and exported over
 * OTLP/HTTP (protobuf). The SDK is loaded only when tracing is on. Throws CONFIG_INVALID for
 * settings veil cannot honour.
 */
export async function openTracing(env: Readonly<Record<string, string | undefined>>, options: TracingOptions): Promise<Tracing> {
  const settings = tracingSettings(env, options.serviceName);
  if (!settings) return TRACING_OFF;
  const { sdkTracing } = await import('./tracing-sdk.ts');
  const tracing = sdkTracing(settings, options);
  // the origin only: a path or query may carry a tenant or a credential. `serviceName`, not
  // `service`: every line already carries the logger's own `service` (src/app/logger.ts)
  options.log?.info({ endpoint: new URL(settings.url).origin, serviceName: settings.serviceName }, 'traces: exporting spans over OTLP/HTTP');
  return tracing;
}
