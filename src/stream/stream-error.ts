import { VeilError } from '../engine/index.ts';
import { ERROR_CATALOG, type ErrorCode } from '../errors/catalog.ts';

/** Where a record-level failure sits: a path in the pipeline's terms (`contact.email`, `byEmail.*`) and, for the unmapped guard, the kind of personal data found. Never a value. */
export interface Finding {
  path?: string;
  kind?: string;
  /** the writer's schema id the failure is about (a schema refused for the pipeline: SCHEMA_PATH_UNKNOWN) */
  schema?: number;
}

/**
 * The stream's one error type (its codes are in src/errors/codes.ts): a record that cannot be
 * protected (dead-lettered unless retriable) or a request the unprotect responder refuses. A
 * record fails with any layer's code — the engine's for a value, the doors' for the unmapped
 * guard, the stream's for its framing — so its status, title and retriable come from the whole
 * catalog. Its message never holds a value.
 */
export class StreamError extends VeilError {
  declare readonly code: ErrorCode;
  /** the path (and kind) the failure names; a dead letter carries them as veil.error.path / veil.error.kind */
  readonly path?: string;
  readonly kind?: string;
  readonly schema?: number;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown } & Finding) {
    super(code, message, [], options?.cause === undefined ? undefined : { cause: options.cause }, ERROR_CATALOG[code]);
    this.name = 'StreamError';
    if (options?.path !== undefined) this.path = options.path;
    if (options?.kind !== undefined) this.kind = options.kind;
    if (options?.schema !== undefined) this.schema = options.schema;
  }
}

/**
 * Why a schema cannot be planned for a pipeline's paths (the serdes' clean-schema derivations,
 * the Protobuf plan, tags, a JSON Schema validator): SCHEMA_PATH_UNKNOWN with the mapped path the
 * schema lacks, else RECORD_MALFORMED. The serde refuses the schema's records, quoting the reason.
 */
export function schemaUnfit(reason: string, unknownPath?: string): StreamError {
  return unknownPath === undefined ? new StreamError('RECORD_MALFORMED', reason) : new StreamError('SCHEMA_PATH_UNKNOWN', reason, { path: unknownPath });
}

/** The reason and unknown path of a schemaUnfit refusal, for a serde to keep with the schema id; undefined for any other error. */
export function unfitReason(e: unknown): { error: string; unknownPath?: string } | undefined {
  if (!(e instanceof StreamError)) return undefined;
  return e.code === 'SCHEMA_PATH_UNKNOWN' && e.path !== undefined ? { error: e.message, unknownPath: e.path } : { error: e.message };
}
