import { isSubjectId, SUBJECT_ID_RULE, VeilError } from '../engine/index.ts';

/** Refuses what is not a subject id, without echoing it (it is personal data). */
export function assertSubjectId(id: unknown): asserts id is string {
  if (!isSubjectId(id)) throw new VeilError('SUBJECT_ID_INVALID', `a subject id has ${SUBJECT_ID_RULE}`);
}

/** The reference as text (record keys, logs, notifications): hex of the keyed hash, never the id. */
export const refHex = (ref: Uint8Array): string => Buffer.from(ref.buffer, ref.byteOffset, ref.byteLength).toString('hex');
