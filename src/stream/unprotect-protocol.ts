/**
 * Unprotect on demand over Kafka (documented in docs/stream.md "Unprotect over Kafka" and
 * schemas/unprotect-protocol.md). Request record: value = transform request body (spec §2.1);
 * headers below. Reply record on the request's reply-to topic: value = transform response body
 * (§2.7) or {"error": problem}, headers `correlation-id` and `veil.status` (200, or the HTTP
 * status of the error code).
 */
export const REQUEST_HEADERS = {
  authorization: 'authorization',
  correlationId: 'correlation-id',
  replyTo: 'reply-to',
  /** optional: milliseconds since the epoch after which the request is answered with DEADLINE_EXCEEDED */
  deadline: 'deadline',
} as const;

export const REPLY_STATUS_HEADER = 'veil.status';

export const CORRELATION_ID = /^[A-Za-z0-9._:-]{1,128}$/;
