/**
 * Unprotect on demand over Kafka (documented in docs/stream.md "Unprotect over Kafka" and
 * schemas/unprotect-protocol.md). Request record: value = transform request body (spec §2.1);
 * headers below. Reply record on the request's reply-to topic: value = transform response body
 * (§2.7) or {"error": problem}, headers `correlation-id` and `veil.status` (200, or the HTTP
 * status of the error code), and `traceparent` when the request carried a valid one and tracing is
 * on: it names the responder's span for the request, in the request's trace.
 */
export const REQUEST_HEADERS = {
  authorization: 'authorization',
  correlationId: 'correlation-id',
  replyTo: 'reply-to',
  /** optional: milliseconds since the epoch after which the request is answered with DEADLINE_EXCEEDED */
  deadline: 'deadline',
  /** optional: the requester's W3C trace context; the responder's span continues its trace */
  traceparent: 'traceparent',
  tracestate: 'tracestate',
} as const;

/** On a reply: the responder's span for the request (W3C traceparent), when the request named a trace. */
export const REPLY_TRACEPARENT_HEADER = 'traceparent';

export const REPLY_STATUS_HEADER = 'veil.status';

export const CORRELATION_ID = /^[A-Za-z0-9._:-]{1,128}$/;
