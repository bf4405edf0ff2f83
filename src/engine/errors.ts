/**
 * The engine's error codes, and veil's error type. Errors are part of the API: every code has an
 * HTTP status, a title and whether retrying the same call can succeed. The other layers' codes
 * are defined in src/errors/codes.ts, each layer's error type (a VeilError, `src/<layer>/errors.ts`)
 * made from its table by layerErrorType; src/errors/catalog.ts gathers them all, and
 * docs/errors.md is checked against that.
 */
export interface ErrorEntry {
  status: number;
  retriable: boolean;
  title: string;
}

export const ENGINE_ERRORS = {
  REQUEST_MALFORMED: { status: 400, retriable: false, title: 'The request body does not match the transform request schema' },
  GUID_INVALID: { status: 400, retriable: false, title: 'An identifier is not a UUID' },
  GUID_DUPLICATE: { status: 400, retriable: false, title: 'An identifier is used more than once in the call' },
  REFERENCE_UNRESOLVED: { status: 400, retriable: false, title: 'A request refers to a context guid that is not in the call' },
  EVIDENCE_UNKNOWN: { status: 400, retriable: false, title: 'An evidence name is not used by any configured context' },
  PROCESSING_CONTEXT_UNMATCHED: { status: 400, retriable: false, title: 'No configured processing context matches the evidences' },
  PROCESSING_CONTEXT_AMBIGUOUS: { status: 400, retriable: false, title: 'Several configured processing contexts match the evidences equally well' },
  ROLE_NOT_HELD: { status: 403, retriable: false, title: 'A Role evidence names a role the caller does not hold' },
  RIGHTS_CONTEXT_UNMATCHED: { status: 403, retriable: false, title: 'No configured rights context matches the evidences' },
  ACTION_NOT_GRANTED: { status: 403, retriable: false, title: 'The action is not granted on the field' },
  FIELD_UNKNOWN: { status: 422, retriable: false, title: 'The class or property is not configured' },
  ACTION_NOT_CONFIGURED: { status: 422, retriable: false, title: 'The property has no sequence for the action' },
  VALUE_TOO_SHORT: { status: 422, retriable: false, title: 'The value is too short for the transformer' },
  VALUE_TOO_LONG: { status: 422, retriable: false, title: 'The value is longer than the transformer accepts' },
  VALUE_NOT_IN_ALPHABET: { status: 422, retriable: false, title: 'The value holds characters the transformer cannot process' },
  PROTECTED_VALUE_INVALID: { status: 422, retriable: false, title: 'The protected value is malformed, tampered with, or belongs to another field' },
  SUBJECT_ID_INVALID: {
    status: 400,
    retriable: false,
    title: 'A Subject evidence is repeated, empty, longer than 512 bytes, or holds control characters or ill-formed Unicode',
  },
  SUBJECT_REQUIRED: {
    status: 422,
    retriable: false,
    title:
      "The field's sequence uses a key scoped to the data subject, and the call names no subject (no Subject evidence, a record without a key, a NULL subject column)",
  },
  SUBJECT_ERASED: {
    status: 422,
    retriable: false,
    title:
      'The value belongs to a data subject whose key was erased: it can no longer be unprotected (and, when the configuration keeps erased ids refused, the subject cannot be protected again)',
  },
  KEY_VERSION_UNKNOWN: { status: 422, retriable: false, title: 'The protected value names a key version that the keystore does not hold' },
  KEY_UNAVAILABLE: { status: 503, retriable: true, title: 'A key needed for the call cannot be loaded' },
  CONFIG_INVALID: { status: 500, retriable: false, title: 'The configuration is invalid' },
  NOT_FOUND: { status: 404, retriable: false, title: 'No such resource' },
  INTERNAL: { status: 500, retriable: true, title: 'An unexpected error; nothing was transformed' },
} as const satisfies Record<string, ErrorEntry>;

export type EngineErrorCode = keyof typeof ENGINE_ERRORS;

/** One offending element. Never carries a value: a pointer and a reason only. */
export interface ErrorDetail {
  /** the engine's codes, or a layer's (a field a door refused) */
  code: string;
  /** JSON pointer into the request body (or the config file) */
  pointer: string;
  message: string;
  request?: string;
  instance?: number;
  className?: string;
  propertyName?: string;
}

/**
 * veil's error: a stable code with its status, title and whether a retry can succeed, a message
 * that never holds a value, details pointing at what was refused, and the cause. The engine
 * raises it with its own codes; each layer's error type extends it with that layer's codes and
 * catalog (src/keystore/errors.ts, src/stream/errors.ts, …), so `e instanceof VeilError` catches
 * them all and `e.status`, `e.retriable` and `e.title` need no catalog at hand.
 */
export class VeilError extends Error {
  readonly code: string;
  readonly status: number;
  readonly retriable: boolean;
  readonly title: string;
  readonly details: readonly ErrorDetail[];

  constructor(code: EngineErrorCode, message: string, details?: readonly ErrorDetail[], options?: { cause?: unknown });
  /** a layer's error type: its code with the entry of its catalog */
  constructor(code: string, message: string, details: readonly ErrorDetail[], options: { cause?: unknown } | undefined, entry: ErrorEntry);
  constructor(
    code: string,
    message: string,
    details: readonly ErrorDetail[] = [],
    options?: { cause?: unknown },
    entry: ErrorEntry = ENGINE_ERRORS[code as EngineErrorCode],
  ) {
    super(message, options);
    this.name = 'VeilError';
    this.code = code;
    this.status = entry.status;
    this.retriable = entry.retriable;
    this.title = entry.title;
    this.details = details;
  }

  toJSON(): { code: string; message: string; retriable: boolean; details: readonly ErrorDetail[] } {
    return { code: this.code, message: this.message, retriable: this.retriable, details: this.details };
  }
}

export interface LayerErrorOptions {
  cause?: unknown;
  details?: readonly ErrorDetail[];
}

/**
 * The base of each layer's error type (src/<layer>/errors.ts, made by layerErrorType): a VeilError
 * with one of that layer's codes and the entry of its catalog; the name is the subclass's.
 */
export abstract class LayerError<C extends string> extends VeilError {
  declare readonly code: C;
  protected constructor(catalog: Readonly<Record<C, ErrorEntry>>, code: C, message: string, options?: LayerErrorOptions) {
    super(code, message, options?.details ?? [], options?.cause === undefined ? undefined : { cause: options.cause }, catalog[code]);
    this.name = new.target.name;
  }
}

/**
 * A layer's error type, made from its table of codes: `class AuditError extends
 * layerErrorType(AUDIT_ERRORS) {}`. The constructor every layer's type shares is written once,
 * here; the type's name is the class's.
 */
export function layerErrorType<C extends string>(catalog: Readonly<Record<C, ErrorEntry>>) {
  return class extends LayerError<C> {
    constructor(code: C, message: string, options?: LayerErrorOptions) {
      super(catalog, code, message, options);
    }
  };
}

/** A fault code's entry: whether the same call may succeed later. Faults have no status or title: no client sees them. */
export interface FaultEntry {
  retriable: boolean;
}

export interface LayerFaultOptions {
  cause?: unknown;
  /** a fault's own answer, for a type without a table (open-ended codes: a Kafka client's); else its table's */
  retriable?: boolean;
}

/**
 * A layer's fault type, made from its table of fault codes (`src/<layer>/errors.ts`): `class
 * GatewayFault extends layerFaultType(GATEWAY_FAULTS) {}`; without a table the codes are
 * open-ended and each fault says whether it is retriable (`KafkaError`, a client's codes).
 *
 * Why a second helper: a fault is what a layer raises for itself and some caller inside veil
 * handles — a body cut short that the gateway turns into REQUEST_TIMEOUT or UPSTREAM_TIMEOUT by
 * where it was read, a command line's usage (exit 2), a Kafka client's failure, a selector that
 * does not parse. It is never answered to a client as it is, so it is not a VeilError: every
 * door renders a VeilError as problem details, and a fault's code is no wire code (docs/errors.md
 * lists those). Where a catch site would only map a fault to one wire code, the layer raises its
 * error type (layerErrorType) with that code instead. So a layer has its error type and, only if
 * it needs one, its fault type — no third, and none written by hand.
 */
export function layerFaultType<C extends string>(faults?: Readonly<Record<C, FaultEntry>>) {
  return class extends Error {
    readonly code: C;
    readonly retriable: boolean;
    constructor(code: C, message: string, options?: LayerFaultOptions) {
      super(message, options?.cause === undefined ? undefined : { cause: options.cause });
      this.name = new.target.name;
      this.code = code;
      // fail closed: a code with no entry and no answer of its own is not retried
      this.retriable = options?.retriable ?? faults?.[code]?.retriable ?? false;
    }
  };
}

/**
 * Raised by a transformer for one value (or returned in its place by a batch): one of the
 * engine's codes. The engine turns it into an ErrorDetail with the request guid and instance
 * index, the stream into the record's dead letter; its message must describe the problem, never
 * the value. A VeilError, so one that escaped would be answered with its own code.
 */
export class ValueError extends VeilError {
  declare readonly code: EngineErrorCode;
  constructor(code: EngineErrorCode, message: string) {
    super(code, message);
    this.name = 'ValueError';
  }
}

/**
 * The engine checks a call in stages (shape, identifiers, authorization, fields, values) and stops
 * at the first stage with problems, so the details of one error share a status; the first leads.
 */
export function combine(details: readonly ErrorDetail[], catalog: Readonly<Record<string, ErrorEntry>> = ENGINE_ERRORS): VeilError {
  const first = details[0];
  if (!first) throw new Error('combine() needs at least one detail');
  const entry = catalog[first.code];
  if (!entry) throw new Error(`combine(): ${first.code} is not a code of the catalog given`);
  const summary = details.length === 1 ? first.message : `${details.length} problems in the call; the first: ${first.message}`;
  return new VeilError(first.code, summary, details, undefined, entry);
}
