import { frame, frameError, MAX_DB_ROLE_BYTES, Reader, str, u16, u32, u8 } from './frame-codec.ts';
import { OP_LEASE, OP_LEASE_AUDIT, parseLeaseFrame, type LeaseFrame } from './lease-frames.ts';

/**
 * The frames of veil's database socket (docs/database.md, "The local socket"): what PL/Python's
 * client (plpython/veil_socket.py) and veil serve (socket-server.ts) exchange. One strict
 * grammar on both sides, so they cannot disagree about where a value ends:
 *
 *   frame   = length:u32be payload            length = bytes of payload, 1 .. the frame limit
 *   AUTH    = 0x01 version:u8(=1) token:str16                       → AUTH_OK | ERROR
 *   PROTECT = 0x02 dbRole:str8 role:str8 count:u32 (class:str8 property:str8 value:str32){count}
 *                                                                     → VALUES | ERROR
 *   PROTECT_SUBJECTS = 0x03 dbRole:str8 role:str8 count:u32
 *             (class:str8 property:str8 subject:str16 value:str32){count} → VALUES | ERROR
 *             each value with its data subject (keys scoped to the subject, issue 29)
 *   AUTH_OK = 0x81 validFor:u32 (seconds the token stays accepted)
 *   VALUES  = 0x82 count:u32 (value:str32){count}
 *   ERROR   = 0xE0 status:u16 retriable:u8 code:str8 title:str16 pointer:str16
 *                  count:u16 (instance:u32){count} retryAfter:u32 (seconds, 0 = none)
 *   LEASE (0x04), LEASE_AUDIT (0x05), LEASE_GRANT (0x83), AUDITED (0x84): lease-frames.ts
 *
 * strN is a length (uN, big-endian) and that many bytes of UTF-8, checked strictly. A payload
 * must end exactly where its grammar ends: trailing bytes are as malformed as missing ones.
 */
export const OP_AUTH = 0x01;
export const OP_PROTECT = 0x02;
export const OP_PROTECT_SUBJECTS = 0x03;
export const REPLY_AUTH_OK = 0x81;
export const REPLY_VALUES = 0x82;
export const REPLY_ERROR = 0xe0;
export const PROTOCOL_VERSION = 1;
export const HEADER_BYTES = 4;
export { MAX_DB_ROLE_BYTES };
export const MAX_TOKEN_BYTES = 8192;
export const MAX_ERROR_INSTANCES = 100;
/** a subject id is at most 512 bytes (the engine checks the rest of its rule) */
export const MAX_SUBJECT_BYTES = 512;

export type ClientFrame = { op: 'auth'; token: string } | { op: 'protect'; dbRole: string; role: string; items: ProtectItem[] } | LeaseFrame;

export interface ProtectItem {
  className: string;
  propertyName: string;
  value: string;
  /** the value's data subject (PROTECT_SUBJECTS); absent: none (PROTECT) */
  subject?: string;
}

/**
 * Parses one client payload. `maxInstances` bounds the count before anything is allocated for
 * it (each instance takes at least 6 bytes, so a count beyond the payload is malformed too).
 */
export function parseClientFrame(payload: Buffer, maxInstances: number): ClientFrame {
  const r = new Reader(payload);
  const op = r.u8('the operation');
  if (op === OP_AUTH) {
    if (r.u8('the version') !== PROTOCOL_VERSION) throw frameError('the protocol version is not 1');
    const token = r.str(2, 'the token', 1, MAX_TOKEN_BYTES);
    r.end();
    return { op: 'auth', token };
  }
  if (op === OP_LEASE || op === OP_LEASE_AUDIT) return parseLeaseFrame(op, r);
  if (op !== OP_PROTECT && op !== OP_PROTECT_SUBJECTS) throw frameError('unknown operation');
  const subjects = op === OP_PROTECT_SUBJECTS;
  const dbRole = r.str(1, 'the database role', 1, MAX_DB_ROLE_BYTES);
  const role = r.str(1, 'the veil role', 1);
  const count = r.u32('the count');
  // the fewest bytes an instance takes: its length fields and one byte of each name (and subject)
  if (count < 1 || count > maxInstances || count * (subjects ? 9 : 6) > r.remaining) throw frameError('the count is outside the limit or the frame');
  const items: ProtectItem[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const className = r.str(1, 'a class name', 1);
    const propertyName = r.str(1, 'a property name', 1);
    if (subjects) {
      const subject = r.str(2, 'a subject', 1, MAX_SUBJECT_BYTES);
      items[i] = { className, propertyName, subject, value: r.str(4, 'a value') };
    } else items[i] = { className, propertyName, value: r.str(4, 'a value') };
  }
  r.end();
  return { op: 'protect', dbRole, role, items };
}

export function authOkFrame(validForSeconds: number): Buffer {
  return frame([u8(REPLY_AUTH_OK), u32(Math.max(0, Math.min(0xffffffff, Math.floor(validForSeconds))))]);
}

/** VALUES, written into one buffer (one per call on the hot path). */
export function valuesFrame(values: readonly string[]): Buffer {
  const lengths = values.map((v) => Buffer.byteLength(v, 'utf8'));
  const size = lengths.reduce((n, l) => n + 4 + l, 5);
  const out = Buffer.allocUnsafe(HEADER_BYTES + size);
  out.writeUInt32BE(size, 0);
  out[4] = REPLY_VALUES;
  out.writeUInt32BE(values.length, 5);
  let at = 9;
  for (let i = 0; i < values.length; i++) {
    out.writeUInt32BE(lengths[i]!, at);
    at += 4 + out.write(values[i]!, at + 4, 'utf8');
  }
  return out;
}

export interface ErrorReply {
  code: string;
  status: number;
  retriable: boolean;
  /** the catalog's title or a message built from codes and names: never a value */
  title: string;
  pointer?: string;
  instances?: readonly number[];
  retryAfterSeconds?: number;
}

export function errorFrame(e: ErrorReply): Buffer {
  const instances = (e.instances ?? []).slice(0, MAX_ERROR_INSTANCES);
  return frame([
    u8(REPLY_ERROR),
    u16(e.status),
    u8(e.retriable ? 1 : 0),
    ...str(8, e.code),
    ...str(16, e.title),
    ...str(16, e.pointer ?? ''),
    u16(instances.length),
    ...instances.map(u32),
    u32(Math.max(0, Math.min(0xffffffff, Math.ceil(e.retryAfterSeconds ?? 0)))),
  ]);
}
