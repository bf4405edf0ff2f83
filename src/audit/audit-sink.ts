/** The adapter a call arrived through; a new adapter (portal tester, gateway) adds its name. `admin`: the service's admin API (/admin/subjects/*); `cli`: the veil command. */
export type AuditChannel = 'http' | 'kafka' | 'portal' | 'gateway' | 'admin' | 'cli';

/** One audited call: who, when, which fields, how many values, outcome. Never a value. */
export interface AuditEvent {
  /** unique per event, chosen by veil */
  eventId: string;
  time: string;
  requestId: string;
  channel: AuditChannel;
  client?: string;
  subject?: string;
  issuer?: string;
  outcome: 'ok' | 'denied' | 'failed';
  code?: string;
  /** values in the call */
  instances: number;
  /** per configured field and action: how many values (empty when refused before planning) */
  fields: { className: string; propertyName: string; action: string; count: number }[];
  /** an administration event of the portal (sign-in, draft saved, published, key rotated): what and on what, never a value */
  admin?: { action: string; target?: string };
  /**
   * A data subject's erasure or status look-up (issue 29, admin action subject.erase or
   * subject.status): the subject's reference (a keyed hash, never the id; absent when the call was
   * refused before the id was read), the generation, whether it was erased before, the receipt's
   * jti, and why. Never key material.
   */
  erasure?: { subject?: string; generation?: number; state?: 'exists' | 'erased' | 'unknown'; alreadyErased?: boolean; receipt?: string; reason?: string };
}

/** Where audit events go. `record` resolves once the event is durably handed off, or rejects. */
export interface AuditSink {
  record(event: AuditEvent): Promise<void>;
  close(): Promise<void>;
  /** the latest events, newest first, when the sink can read back */
  recent?(limit: number): Promise<AuditEvent[]>;
  /**
   * One page of events, newest first, starting before `cursor` (from the previous page's `next`;
   * none: the newest). Reads at most a bounded number of bytes, never the whole log.
   */
  page?(options: { limit: number; cursor?: string }): Promise<AuditPage>;
}

export interface AuditPage {
  events: AuditEvent[];
  /** the cursor of the next (older) page; absent at the oldest record kept */
  next?: string;
}

export { FileAuditSink, DEFAULT_AUDIT_ROTATION, type AuditRotation } from './audit-file.ts';
