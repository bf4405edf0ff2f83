import type { SubjectEvent } from './subject-state.ts';

/**
 * The records of the subject-key topic. Record keys carry the subject's reference (hex of a keyed
 * hash), never its id:
 *   `k/<ref>/<gen>/<writer>`  a wrapped key for generation gen, by one writer (unique per write, so
 *                             compaction never replaces the key that won by one that lost);
 *                             its tombstone (null value) removes it.
 *   `e/<ref>`                 the subject's erasure: its newest erased generation (never tombstoned,
 *                             so a process that reads the topic after compaction dropped the
 *                             tombstones still sees it).
 *   `r/<ref>/<gen>`           the live key of generation gen wrapped anew, under a newer version of
 *                             the wrapping key (its rotation, issue 43): the same data key, the
 *                             `k/` record's bytes superseded; tombstoned by the subject's erasure.
 * Values are JSON: key `{v:1, gen, w: base64 wrapped, at}`, erasure `{v:1, gen, at, material?}`.
 * Every record of a subject goes to one partition (chosen from the reference), so its order is
 * the same for every reader.
 */
export interface ParsedRecord {
  ref: string;
  event: SubjectEvent;
}

const KEY = /^k\/([0-9a-f]{32})\/([1-9][0-9]{0,9})\/([0-9a-f-]{36})$/;
const ERASED = /^e\/([0-9a-f]{32})$/;
const REWRAP = /^r\/([0-9a-f]{32})\/([1-9][0-9]{0,9})$/;

export const keyRecordKey = (ref: string, gen: number, writer: string): string => `k/${ref}/${gen}/${writer}`;
export const erasureRecordKey = (ref: string): string => `e/${ref}`;
export const rewrapRecordKey = (ref: string, gen: number): string => `r/${ref}/${gen}`;

export function keyRecordValue(gen: number, wrapped: Buffer, at: number): string {
  return JSON.stringify({ v: 1, gen, w: wrapped.toString('base64'), at });
}

/** A rewrap's value: the key record's shape (`{v:1, gen, w, at}`). */
export const rewrapRecordValue = (gen: number, wrapped: Buffer, at: number): string => keyRecordValue(gen, wrapped, at);

export function erasureRecordValue(gen: number, at: number, material?: string): string {
  return JSON.stringify({ v: 1, gen, at, ...(material ? { material } : {}) });
}

/** The partition of a subject's records: its reference's first 4 bytes modulo the partition count. */
export function partitionOf(ref: string, partitions: number): number {
  return Number.parseInt(ref.slice(0, 8), 16) % partitions;
}

/** A record as an event; undefined for anything that is not a record of this topic (ignored), and for a rewrap's tombstone. */
export function parseRecord(key: Buffer | null, value: Buffer | null, timestamp: number): ParsedRecord | undefined {
  const k = key?.toString('latin1') ?? '';
  const rewrapMatch = REWRAP.exec(k);
  if (rewrapMatch) {
    const body = value === null ? undefined : json(value);
    const wrapped = typeof body?.w === 'string' ? Buffer.from(body.w, 'base64') : undefined;
    if (!body || body.gen !== Number(rewrapMatch[2]) || !wrapped?.length || !Number.isSafeInteger(body.at)) return undefined;
    return { ref: rewrapMatch[1]!, event: { kind: 'rewrap', gen: body.gen as number, wrapped, at: body.at as number } };
  }
  const keyMatch = KEY.exec(k);
  if (keyMatch) {
    const ref = keyMatch[1]!;
    if (value === null) return { ref, event: { kind: 'tombstone', record: k, at: timestamp } };
    const body = json(value);
    const wrapped = typeof body?.w === 'string' ? Buffer.from(body.w, 'base64') : undefined;
    if (!body || body.gen !== Number(keyMatch[2]) || !wrapped?.length || !Number.isSafeInteger(body.at)) return undefined;
    return { ref, event: { kind: 'key', gen: body.gen, wrapped, record: k, at: body.at as number } };
  }
  const erasedMatch = ERASED.exec(k);
  if (erasedMatch && value !== null) {
    const body = json(value);
    if (!body || !Number.isSafeInteger(body.gen) || (body.gen as number) < 1 || !Number.isSafeInteger(body.at)) return undefined;
    const material = typeof body.material === 'string' && /^[0-9a-f]{64}$/.test(body.material) ? body.material : undefined;
    return { ref: erasedMatch[1]!, event: { kind: 'erased', gen: body.gen as number, at: body.at as number, ...(material ? { material } : {}) } };
  }
  return undefined;
}

function json(value: Buffer): Record<string, unknown> | undefined {
  try {
    const body = JSON.parse(value.toString('utf8')) as unknown;
    return typeof body === 'object' && body !== null && (body as { v?: unknown }).v === 1 ? (body as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
