import { VeilError } from '../engine/errors.ts';

export class UsageError extends Error {}

/** A failure as one JSON document for stderr/stdout: code, message, details; never a stack or value. */
export function errorDocument(error: unknown): { error: { code: string; message: string; retriable: boolean; details?: unknown } } {
  if (error instanceof VeilError) {
    return { error: { code: error.code, message: error.message, retriable: error.retriable, details: error.details.length ? error.details : undefined } };
  }
  return { error: { code: 'INTERNAL', message: 'unexpected internal error', retriable: false } };
}

export function exitCodeOf(error: unknown): number {
  return error instanceof UsageError ? 2 : 1;
}
