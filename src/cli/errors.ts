import { VeilError } from '../engine/index.ts';

/** A command line the command cannot run (exit 2); its message names options, never a value given. */
export class UsageError extends Error {
  readonly exitCode = 2;
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A failure as one JSON document for stderr/stdout: code, message, details; never a stack or value. */
export function errorDocument(error: unknown): { error: { code: string; message: string; retriable: boolean; details?: unknown } } {
  if (error instanceof VeilError) {
    return { error: { code: error.code, message: error.message, retriable: error.retriable, details: error.details.length ? error.details : undefined } };
  }
  return { error: { code: 'INTERNAL', message: 'unexpected internal error', retriable: false } };
}

export function exitCodeOf(error: unknown): number {
  return error instanceof UsageError ? error.exitCode : 1;
}
