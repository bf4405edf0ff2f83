import { createHash } from 'node:crypto';
import { SubjectsError } from './errors.ts';

const MAX_BYTES = 512;
// C0 and C1 controls, and lone surrogates (not well-formed Unicode)
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f]/u;

/** Refuses what is not a subject id, without echoing it (it is personal data). */
export function assertSubjectId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || id.length === 0 || !id.isWellFormed() || FORBIDDEN.test(id) || Buffer.byteLength(id, 'utf8') > MAX_BYTES) {
    throw new SubjectsError('SUBJECT_ID_INVALID', `a subject id has 1 to ${MAX_BYTES} bytes of well-formed Unicode without control characters`);
  }
}

/** The reference as text (record keys, logs, notifications): hex of the keyed hash, never the id. */
export const refHex = (ref: Uint8Array): string => Buffer.from(ref.buffer, ref.byteOffset, ref.byteLength).toString('hex');

/** A short label for logs and metrics: the first 12 hex digits of SHA-256 of the reference (already a keyed hash). */
export const refLabel = (ref: Uint8Array): string => createHash('sha256').update(ref).digest('hex').slice(0, 12);
