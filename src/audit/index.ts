// The audit module's front door: the audit event of a call and its sinks (a rotated JSON-lines
// file; the sink interface the stream's and the portal's logs implement), and GuardedTransform,
// the one home of "audit before cleartext leaves". Outside src/audit only this file (and the
// layer's errors.ts) is imported (tools/eslint-plugin-veil.js, front-doors).
export { auditEvent, fieldCounts, type AuditCaller } from './audit-event.ts';
export { FileAuditSink, type AuditChannel, type AuditEvent, type AuditPage, type AuditRotation, type AuditSink } from './audit-sink.ts';
export { GuardedTransform, type GuardedCaller } from './guarded-transform.ts';
