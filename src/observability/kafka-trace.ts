import type { TraceCarrier } from './tracing.ts';

/** A Kafka record header as src/stream's ports carry it (structurally: src/observability imports no adapter). */
export interface RecordHeader {
  readonly key: string;
  readonly value: Buffer | null;
}

export const TRACEPARENT = 'traceparent';
export const TRACESTATE = 'tracestate';

/**
 * A record's W3C trace context, from its headers (the names the OpenTelemetry messaging
 * conventions use for Kafka). Exactly one `traceparent` header with a value names a parent: none,
 * a null one, or a repeated one names none (a repeated one is ambiguous, as a repeated HTTP
 * traceparent is). Only called when tracing is on.
 */
export function traceCarrierOf(headers: readonly RecordHeader[]): TraceCarrier | undefined {
  let parent: Buffer | null | undefined;
  let state: Buffer | undefined;
  for (const h of headers) {
    if (h.key === TRACEPARENT) {
      if (parent !== undefined) return undefined;
      parent = h.value;
    } else if (h.key === TRACESTATE && state === undefined && h.value !== null) {
      state = h.value;
    }
  }
  if (!parent) return undefined;
  // latin1: one character per byte, so bytes that are not the W3C format's ASCII fail its check rather than decode
  return { traceparent: parent.toString('latin1'), ...(state ? { tracestate: state.toString('latin1') } : {}) };
}

/**
 * The headers with the (one) traceparent's value replaced by `traceparent`, in its place; every
 * other header — tracestate included — as it was, in order. Only called for a record whose
 * traceparent traceCarrierOf accepted.
 */
export function withTraceparent<H extends RecordHeader>(headers: readonly H[], traceparent: string): H[] {
  const value = Buffer.from(traceparent, 'latin1');
  return headers.map((h) => (h.key === TRACEPARENT ? { ...h, value } : h));
}
