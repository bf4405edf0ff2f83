/**
 * The unprotect front door of src/stream: unprotect on demand over Kafka — the responder (veil's
 * side), the client helper (an application's side) and the protocol's headers
 * (schemas/unprotect-protocol.md). Code outside src/stream/unprotect imports only this file.
 */
export { REQUEST_SPAN, UnprotectResponder, type ResponderDeps } from './responder.ts';
export { UnprotectClient, type UnprotectReply } from './client.ts';
export { CORRELATION_ID, REPLY_STATUS_HEADER, REPLY_TRACEPARENT_HEADER, REQUEST_HEADERS } from './protocol.ts';
export { ResponderRestarts } from './responder-restarts.ts';
