import { frame, frameError, MAX_DB_ROLE_BYTES, Reader, str, u16, u32, u8 } from './frame-codec.ts';

/**
 * The lease frames of veil's database socket (docs/database.md, "Leased keys"), beside the
 * PROTECT frames of socket-frames.ts and parsed by the same strict rules; veil_lease.py speaks
 * the same grammar from inside PostgreSQL.
 *
 *   LEASE       = 0x04 dbRole:str8 role:str8 class:str8 property:str8          → LEASE_GRANT | ERROR
 *   LEASE_AUDIT = 0x05 dbRole:str8 count:u16 (lease:u32 values:u32){count}       → AUDITED | ERROR
 *                 the values the backend protected under each lease since its last report
 *   LEASE_GRANT = 0x83 lease:u32 validForMs:u32 budget:u32 maxChars:u32 kind:u8
 *                 header:bytes8 label:str16 key:bytes8
 *                 kind 1 = aes-siv, 2 = aes-gcm; header: the engine's output header for the key
 *                 version; label: the binding label (associated data); budget: values the lease
 *                 covers; maxChars: service.limits.valueLength (longer values go the round trip)
 *   AUDITED     = 0x84 count:u16 (holds:u8){count}    index-aligned with the report: 1 the lease
 *                 still holds, 0 it ended (expired, budget spent, configuration or key changed)
 */
export const OP_LEASE = 0x04;
export const OP_LEASE_AUDIT = 0x05;
export const REPLY_LEASE_GRANT = 0x83;
export const REPLY_AUDITED = 0x84;
/** leases a report may name at once (a backend holds one per field it writes) */
export const MAX_AUDIT_LEASES = 256;
export const LEASE_KINDS = { 'aes-siv': 1, 'aes-gcm': 2 } as const;
export type LeaseKind = keyof typeof LEASE_KINDS;

export type LeaseFrame =
  | { op: 'lease'; dbRole: string; role: string; className: string; propertyName: string }
  | { op: 'lease-audit'; dbRole: string; reports: { lease: number; values: number }[] };

/** Parses a LEASE or LEASE_AUDIT payload after its operation byte (parseClientFrame dispatches here). */
export function parseLeaseFrame(op: number, r: Reader): LeaseFrame {
  const dbRole = r.str(1, 'the database role', 1, MAX_DB_ROLE_BYTES);
  if (op === OP_LEASE) {
    const role = r.str(1, 'the veil role', 1);
    const className = r.str(1, 'a class name', 1);
    const propertyName = r.str(1, 'a property name', 1);
    r.end();
    return { op: 'lease', dbRole, role, className, propertyName };
  }
  const count = r.u16('the count');
  if (count < 1 || count > MAX_AUDIT_LEASES || count * 8 !== r.remaining) throw frameError('the count is outside the limit or the frame');
  const reports = [];
  for (let i = 0; i < count; i++) reports.push({ lease: r.u32('a lease'), values: r.u32('a count of values') });
  r.end();
  return { op: 'lease-audit', dbRole, reports };
}

export interface LeaseGrant {
  lease: number;
  validForMs: number;
  budget: number;
  maxChars: number;
  kind: LeaseKind;
  header: Uint8Array;
  label: string;
  /** the key bytes: written into the frame, never logged */
  key: Uint8Array;
}

/** LEASE_GRANT. The caller overwrites the returned buffer once it is written (it holds the key). */
export function leaseGrantFrame(g: LeaseGrant): Buffer {
  return frame([
    u8(REPLY_LEASE_GRANT),
    u32(g.lease),
    u32(g.validForMs),
    u32(g.budget),
    u32(g.maxChars),
    u8(LEASE_KINDS[g.kind]),
    u8(g.header.length),
    Buffer.from(g.header),
    ...str(16, g.label),
    u8(g.key.length),
    Buffer.from(g.key),
  ]);
}

export function auditedFrame(holds: readonly boolean[]): Buffer {
  return frame([u8(REPLY_AUDITED), u16(holds.length), Buffer.from(holds.map((h) => (h ? 1 : 0)))]);
}
