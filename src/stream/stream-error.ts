import { ERROR_CATALOG, type ErrorCode } from '../errors/catalog.ts';

/** Where a record-level failure sits: a path in the pipeline's terms (`contact.email`, `byEmail.*`) and, for the unmapped guard, the kind of personal data found. Never a value. */
export interface Finding {
  path?: string;
  kind?: string;
  /** the writer's schema id the failure is about (a schema refused for the pipeline: SCHEMA_PATH_UNKNOWN) */
  schema?: number;
}

/** A record-level failure (dead-lettered unless retriable). Its message never holds a value. */
export class StreamError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;
  /** the path (and kind) the failure names; a dead letter carries them as veil.error.path / veil.error.kind */
  readonly path?: string;
  readonly kind?: string;
  readonly schema?: number;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown } & Finding) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'StreamError';
    this.code = code;
    this.retriable = ERROR_CATALOG[code].retriable;
    if (options?.path !== undefined) this.path = options.path;
    if (options?.kind !== undefined) this.kind = options.kind;
    if (options?.schema !== undefined) this.schema = options.schema;
  }
}
