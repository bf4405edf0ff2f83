// The observability front door: tracing (OpenTelemetry, off unless an OTLP endpoint is set; its
// SDK loads only then: tracing.ts imports tracing-sdk.ts on first use), the span attributes every
// door writes, the trace carried in Kafka headers, the process's own metrics and the names of the
// stream's metrics the portal charts. Outside src/observability only this file is imported
// (tools/eslint-plugin-veil.js, front-doors).
export { traceCarrierOf } from './kafka-trace.ts';
export { collectProcessMetrics } from './process-metrics.ts';
export { ATTR, httpErrorType, OUTCOME_OK } from './span-attributes.ts';
export {
  OTHER_PATH,
  SCHEMA_REFUSALS_MAX,
  SCHEMA_REFUSED_METRIC,
  STREAM_METRIC_NAMES,
  UNMAPPED_FINDINGS_METRIC,
  UNMAPPED_PATHS_MAX,
  UNMAPPED_REPORTED_METRIC,
  type ChartedStreamMetric,
} from './stream-metric-names.ts';
export { BatchTrace } from './stream-trace.ts';
export { openTracing, SpanKind, SpanStatusCode, TRACING_OFF, type Span, type Tracing } from './tracing.ts';
