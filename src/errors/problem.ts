import type { VeilError } from '../engine/index.ts';

/** RFC 9457 problem details, with veil's stable code, retriable flag and offending elements. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  retriable: boolean;
  instance?: string;
  /** JSON pointer of the first offending element */
  pointer?: string;
  errors?: VeilError['details'];
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export function problemOf(error: VeilError, requestId?: string): Problem {
  // every VeilError carries its catalog entry (the engine's or its layer's)
  const entry = error;
  const first = error.details[0];
  return {
    type: `urn:veil:error:${error.code.toLowerCase().replaceAll('_', '-')}`,
    title: entry.title,
    status: entry.status,
    detail: error.message,
    code: error.code,
    retriable: entry.retriable,
    ...(requestId ? { instance: `urn:veil:request:${requestId}` } : {}),
    ...(first ? { pointer: first.pointer, errors: error.details } : {}),
  };
}
