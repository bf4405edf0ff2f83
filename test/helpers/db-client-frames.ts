// The client's side of veil's database socket, for tests: the frames PL/Python's client sends
// (plpython/veil_socket.py, veil_lease.py) and the parsing of veil's replies, by the same grammar
// as src/db/socket-frames.ts and lease-frames.ts (veil itself only parses the client's frames and
// writes replies).
import { frame, frameError, Reader, str, u16, u32, u8 } from '../../src/db/frame-codec.ts';
import {
  OP_AUTH,
  OP_PROTECT,
  OP_PROTECT_SUBJECTS,
  PROTOCOL_VERSION,
  REPLY_AUTH_OK,
  REPLY_ERROR,
  REPLY_VALUES,
  type ErrorReply,
  type ProtectItem,
} from '../../src/db/socket-frames.ts';
import { LEASE_KINDS, OP_LEASE, OP_LEASE_AUDIT, REPLY_AUDITED, REPLY_LEASE_GRANT, type LeaseGrant, type LeaseKind } from '../../src/db/lease-frames.ts';

/** The client's AUTH frame (what veil_socket.py sends; tests and tools use it too). */
export function authFrame(token: string): Buffer {
  return frame([u8(OP_AUTH), u8(PROTOCOL_VERSION), ...str(16, token)]);
}

/** The client's PROTECT frame; PROTECT_SUBJECTS when an item names its subject (then each must). */
export function protectFrame(dbRole: string, role: string, items: readonly ProtectItem[]): Buffer {
  const subjects = items.some((i) => i.subject !== undefined);
  const parts: Buffer[] = [u8(subjects ? OP_PROTECT_SUBJECTS : OP_PROTECT), ...str(8, dbRole), ...str(8, role), u32(items.length)];
  for (const i of items) {
    parts.push(...str(8, i.className), ...str(8, i.propertyName));
    if (subjects) parts.push(...str(16, i.subject ?? ''));
    parts.push(...str(32, i.value));
  }
  return frame(parts);
}

export type Reply =
  | { kind: 'auth-ok'; validFor: number }
  | { kind: 'values'; values: string[] }
  | ({ kind: 'error' } & Required<Omit<ErrorReply, 'pointer'>> & { pointer: string })
  | LeaseReply;

/** Parses one reply payload by the same grammar (for tools and tests; PL/Python has its own copy). */
export function parseReply(payload: Buffer): Reply {
  const r = new Reader(payload);
  const kind = r.u8('the reply kind');
  if (kind === REPLY_AUTH_OK) {
    const validFor = r.u32('the validity');
    r.end();
    return { kind: 'auth-ok', validFor };
  }
  if (kind === REPLY_VALUES) {
    const count = r.u32('the count');
    if (count * 4 > r.remaining) throw frameError('the count is outside the frame');
    const values: string[] = [];
    for (let i = 0; i < count; i++) values.push(r.str(4, 'a value'));
    r.end();
    return { kind: 'values', values };
  }
  if (kind === REPLY_LEASE_GRANT || kind === REPLY_AUDITED) return parseLeaseReply(kind, r);
  if (kind !== REPLY_ERROR) throw frameError('unknown reply');
  const status = r.u16('the status');
  const retriable = r.u8('retriable') === 1;
  const code = r.str(1, 'the code', 1);
  const title = r.str(2, 'the title');
  const pointer = r.str(2, 'the pointer');
  const instances: number[] = [];
  for (let i = r.u16('the instance count'); i > 0; i--) instances.push(r.u32('an instance'));
  const retryAfterSeconds = r.u32('retry-after');
  r.end();
  return { kind: 'error', status, retriable, code, title, pointer, instances, retryAfterSeconds };
}

/** The client's frames (what veil_lease.py sends; tests use them). */
export function leaseFrame(dbRole: string, role: string, className: string, propertyName: string): Buffer {
  return frame([u8(OP_LEASE), ...str(8, dbRole), ...str(8, role), ...str(8, className), ...str(8, propertyName)]);
}

export function leaseAuditFrame(dbRole: string, reports: readonly { lease: number; values: number }[]): Buffer {
  return frame([u8(OP_LEASE_AUDIT), ...str(8, dbRole), u16(reports.length), ...reports.flatMap((x) => [u32(x.lease), u32(x.values)])]);
}

export type LeaseReply = { kind: 'lease'; grant: LeaseGrant } | { kind: 'audited'; holds: boolean[] };

/** Parses LEASE_GRANT and AUDITED replies (parseReply dispatches here; tests and tools). */
export function parseLeaseReply(kind: number, r: Reader): LeaseReply {
  if (kind === REPLY_AUDITED) {
    const holds: boolean[] = [];
    for (let i = r.u16('the count'); i > 0; i--) holds.push(r.u8('a lease state') === 1);
    r.end();
    return { kind: 'audited', holds };
  }
  const lease = r.u32('the lease');
  const validForMs = r.u32('the validity');
  const budget = r.u32('the budget');
  const maxChars = r.u32('the value limit');
  const k = r.u8('the kind');
  const leaseKind = (Object.keys(LEASE_KINDS) as LeaseKind[]).find((name) => LEASE_KINDS[name] === k);
  if (!leaseKind) throw frameError('unknown lease kind');
  const header = r.bytes(1, 'the header', 1);
  const label = r.str(2, 'the label');
  const key = r.bytes(1, 'the key', 16, 64);
  r.end();
  return { kind: 'lease', grant: { lease, validForMs, budget, maxChars, kind: leaseKind, header, label, key } };
}
