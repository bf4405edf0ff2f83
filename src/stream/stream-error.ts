import { ERROR_CATALOG, type ErrorCode } from '../engine/index.ts';

/** A record-level failure (dead-lettered unless retriable). Its message never holds a value. */
export class StreamError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StreamError';
    this.code = code;
    this.retriable = ERROR_CATALOG[code].retriable;
  }
}
