import { randomUUID } from 'node:crypto';
import { ROOT_CONTEXT, trace, type Context, type TextMapGetter } from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_INSTANCE_ID, ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { SamplerSettings, TracingSettings } from './tracing-settings.ts';
import type { TraceCarrier, Tracing, TracingOptions } from './tracing.ts';

/** Reads the two W3C fields of a TraceCarrier; nothing else is ever asked of it. */
const CARRIER: TextMapGetter<TraceCarrier> = {
  get: (carrier, key) => (key === 'traceparent' ? carrier.traceparent : key === 'tracestate' ? carrier.tracestate : undefined),
  keys: () => ['traceparent', 'tracestate'],
};

/**
 * `service.instance.id`: a random UUID (v4) per process, as the semantic conventions recommend, so
 * that the spans of two replicas, or of two `--workers` of one serve, are told apart; every tracer
 * of a process shares it. Random rather than derived from a host or pod name, which the
 * conventions ask to keep confidential; OTEL_RESOURCE_ATTRIBUTES may set another.
 */
const INSTANCE_ID = randomUUID();

/**
 * Tracing that is on: a tracer provider of its own (never registered globally), a batch span
 * processor and the OTLP/HTTP protobuf exporter (its headers, TLS files, timeout and compression
 * come from the standard OTEL_EXPORTER_OTLP_* variables, which the exporter reads itself). Loaded
 * only when tracing is configured (tracing.ts).
 */
export function sdkTracing(settings: TracingSettings, options: TracingOptions): Tracing {
  const exporter = reporting(new OTLPTraceExporter({ url: settings.url }), options.log);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_INSTANCE_ID]: INSTANCE_ID, ...settings.resource, [ATTR_SERVICE_NAME]: settings.serviceName }),
    sampler: samplerOf(settings.sampler),
    spanProcessors: [new BatchSpanProcessor({ exporter })],
  });
  const tracer = provider.getTracer('veil');
  const propagator = new W3CTraceContextPropagator();
  let stopped: Promise<void> | undefined;
  return {
    enabled: true,
    remote(carrier): Context | undefined {
      const context = propagator.extract(ROOT_CONTEXT, carrier, CARRIER);
      return trace.getSpanContext(context) === undefined ? undefined : context;
    },
    start(name, o) {
      return tracer.startSpan(
        name,
        {
          kind: o.kind,
          ...(o.attributes ? { attributes: o.attributes } : {}),
          ...(o.links ? { links: o.links } : {}),
          ...(o.startTime === undefined ? {} : { startTime: o.startTime }),
        },
        o.parent ?? ROOT_CONTEXT,
      );
    },
    traceparent(span) {
      const out: TraceCarrier = {};
      propagator.inject(trace.setSpan(ROOT_CONTEXT, span), out, { set: (c, key, value) => void (key === 'traceparent' && (c.traceparent = value)) });
      return out.traceparent ?? '';
    },
    shutdown() {
      stopped ??= Promise.race([
        provider.shutdown().catch(() => undefined),
        new Promise<void>((resolve) => setTimeout(resolve, options.shutdownTimeoutMs ?? 5000).unref()),
      ]);
      return stopped;
    },
  };
}

function samplerOf(s: SamplerSettings): Sampler {
  const root = s.root === 'always_on' ? new AlwaysOnSampler() : s.root === 'always_off' ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(s.ratio);
  return s.parentBased ? new ParentBasedSampler({ root }) : root;
}

/**
 * The exporter, with its failures reported: the first, then every 100th (a collector that is down
 * would otherwise fill the log). The report names the error and the HTTP status, never a span.
 */
function reporting(exporter: SpanExporter, log: TracingOptions['log']): SpanExporter {
  let failures = 0;
  return {
    export(spans, done) {
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS && failures++ % 100 === 0) {
          const status = (result.error as { code?: unknown } | undefined)?.code;
          log?.warn(
            { error: result.error?.name ?? 'ExportError', ...(typeof status === 'number' ? { status } : {}), failures, spans: spans.length },
            'traces: an export to the OTLP endpoint failed; its spans are dropped',
          );
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}
