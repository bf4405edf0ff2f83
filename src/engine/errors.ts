/**
 * Stable error codes of veil. Errors are part of the API: every code has an HTTP status, a title
 * and whether retrying the same call can succeed. docs/errors.md is checked against this catalog.
 */
export const ERROR_CATALOG = {
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
  KEY_VERSION_UNKNOWN: { status: 422, retriable: false, title: 'The protected value names a key version that the keystore does not hold' },
  KEY_UNAVAILABLE: { status: 503, retriable: true, title: 'A key needed for the call cannot be loaded' },
  CONFIG_INVALID: { status: 500, retriable: false, title: 'The configuration is invalid' },
  KEYSTORE_INVALID: { status: 500, retriable: false, title: 'The keystore cannot be read or fails authentication' },
  KMS_UNAVAILABLE: { status: 503, retriable: true, title: 'The KMS holding the key-encryption key cannot be reached (and keys it unwrapped have outlived their cache lifetime)' },
  CONTROL_STORE_UNAVAILABLE: { status: 503, retriable: true, title: 'The shared control store (the Kafka topic of configuration versions and key sets) cannot be read or written' },
  KMS_REFUSED: { status: 500, retriable: false, title: 'The KMS refuses to wrap or unwrap: wrong key-encryption key, credentials, context, or tampered material' },
  KEY_NOT_FOUND: { status: 404, retriable: false, title: 'No key with that id' },
  KEY_EXISTS: { status: 409, retriable: false, title: 'A key with that id exists already' },
  KEY_MATERIAL_INVALID: { status: 400, retriable: false, title: 'Imported key material has the wrong size or encoding' },
  TOKEN_MISSING: { status: 401, retriable: false, title: 'The call carries no bearer token' },
  TOKEN_INVALID: { status: 401, retriable: false, title: 'The bearer token is malformed, not signed by a trusted issuer, or not meant for this service' },
  TOKEN_EXPIRED: { status: 401, retriable: false, title: 'The bearer token has expired or is not yet valid' },
  CONTENT_TYPE_UNSUPPORTED: { status: 415, retriable: false, title: 'The body must be application/json' },
  BODY_TOO_LARGE: { status: 413, retriable: false, title: 'The body exceeds the size limit' },
  LIMIT_EXCEEDED: { status: 413, retriable: false, title: 'The call holds more requests or instances than the limit' },
  REQUEST_TIMEOUT: { status: 408, retriable: false, title: 'The request body did not arrive within the body read timeout' },
  RATE_LIMITED: { status: 429, retriable: true, title: 'Too many calls; retry after the time given in Retry-After' },
  AUDIT_UNAVAILABLE: { status: 503, retriable: true, title: 'The audit sink cannot record the call, so the call was refused' },
  NOT_FOUND: { status: 404, retriable: false, title: 'No such resource' },
  METHOD_NOT_ALLOWED: { status: 405, retriable: false, title: 'The resource does not support the method' },
  INTERNAL: { status: 500, retriable: true, title: 'An unexpected error; nothing was transformed' },
  RECORD_MALFORMED: { status: 422, retriable: false, title: 'A Kafka record cannot be decoded (not JSON, not Avro wire format, or not matching its schema)' },
  RECORD_INVALID: { status: 422, retriable: false, title: 'A Kafka record does not validate against its schema (a json-schema pipeline with validate: true); the message names the instance path and keyword, never the value' },
  SCHEMA_UNKNOWN: { status: 422, retriable: false, title: "The schema id of an Avro record is not in the schema registry" },
  FIELD_MISSING: { status: 422, retriable: false, title: 'A mapped field is absent or null and the pipeline dead-letters such records' },
  UNMAPPED_PERSONAL_DATA: { status: 422, retriable: false, title: 'A value at a path the mapping does not name looks like personal data (the unmapped guard): refused; the error names the path and the kind, never the value' },
  SCHEMA_PATH_UNKNOWN: { status: 422, retriable: false, title: "A mapped path does not exist in the record's writer schema (a renamed field, a typo): the schema version is refused for the pipeline" },
  KEY_MISSING: { status: 422, retriable: false, title: 'The pipeline protects record keys and the record has none' },
  RECORD_TOO_LARGE: { status: 422, retriable: false, title: "The protected record is larger than the clean topic accepts (its max.message.bytes)" },
  DEAD_LETTER_FAILED: { status: 503, retriable: false, title: 'A dead letter cannot be written (larger than the dead-letter topic accepts); the pipeline stops rather than skip the record' },
  TRANSACTION_ABORTED: { status: 503, retriable: true, title: 'A Kafka transaction failed and was aborted; the batch is read again from the committed offset' },
  REGISTRY_UNAVAILABLE: { status: 503, retriable: true, title: 'The schema registry cannot be reached' },
  DEADLINE_EXCEEDED: { status: 504, retriable: false, title: 'The request arrived after its deadline and was not processed' },
  REPLY_TOPIC_NOT_ALLOWED: { status: 400, retriable: false, title: 'The request names no reply-to topic, or one the configuration does not allow' },
  ADMIN_ROLE_MISSING: { status: 403, retriable: false, title: 'The signed-in admin lacks the portal role (viewer, editor, publisher, tester) this page or action needs' },
  CSRF_TOKEN_INVALID: { status: 403, retriable: false, title: 'A state-changing portal request lacks the session\'s CSRF token or carries a wrong one' },
  PUBLISH_REFUSED: { status: 409, retriable: false, title: 'The draft cannot be published: it is invalid, a saved test case fails, or the keystore cannot serve it' },
  // the admin portal and the service's doors
  DRAFT_CHANGED: { status: 409, retriable: false, title: 'The draft changed after the publisher reviewed it (the publish form carries the hash of the text shown); review it again' },
  FOUR_EYES_REQUIRED: { status: 403, retriable: false, title: 'The configuration requires four eyes: a draft cannot be published by an admin who edited it' },
  DRAFT_LIMIT_EXCEEDED: { status: 422, retriable: false, title: 'The draft exceeds a portal limit (size, key version, saved test cases, tester values)' },
  SANDBOX_BUSY: { status: 503, retriable: true, title: 'The portal sandbox (saved test cases, tester on sandbox keys) is busy, or the run exceeded its time limit' },
  SIGN_IN_RATE_LIMITED: { status: 429, retriable: true, title: 'Too many failed portal sign-ins for this client id or address; retry after the time given in Retry-After' },
  SESSIONS_FULL: { status: 503, retriable: true, title: 'The portal holds as many sessions as it may; sign in again when one ends' },
  DB_NOT_CONFIGURED: { status: 500, retriable: false, title: "The database has no veil URL and client credentials (veil db configure)" },
  DB_ROLE_UNMAPPED: { status: 403, retriable: false, title: 'The database role is not mapped to a veil role, or maps to several' },
  DB_CREDENTIALS_REFUSED: { status: 401, retriable: false, title: "veil's token endpoint refused the database's client credentials" },
  DB_SERVICE_UNAVAILABLE: { status: 503, retriable: true, title: 'veil cannot be reached from the database, or answered something that is not a transform response' },
  DB_RATE_LIMITED: { status: 429, retriable: true, title: 'The database role has sent veil more values per minute than veil.rate_limits allows' },
  DB_ARGUMENT_INVALID: { status: 400, retriable: false, title: 'A veil database function was called with a NULL class or property, arrays of different lengths, or a mapped column that is not text' },
  // the gateway (veil gateway)
  BODY_NOT_JSON: { status: 400, retriable: false, title: 'The body of a route with field selectors is not JSON, or cannot be decoded with its Content-Encoding' },
  CONTENT_ENCODING_UNSUPPORTED: { status: 415, retriable: false, title: 'The body of a route with field selectors has a Content-Encoding other than gzip, br, deflate or identity' },
  FIELD_SHAPE_MISMATCH: { status: 422, retriable: false, title: 'A selected request-body field holds an object or array, or sits under a value of the wrong shape, so it cannot be protected' },
  PATH_NOT_CANONICAL: { status: 400, retriable: false, title: 'The request path has dot or empty segments (also once decoded), a backslash, an encoded slash, backslash, NUL or semicolon, a malformed percent-encoding, or ; parameters its route does not accept, which the gateway does not route' },
  REQUEST_FRAMING_INVALID: { status: 400, retriable: false, title: 'The request cannot be parsed unambiguously (both Content-Length and Transfer-Encoding, a repeated or malformed Content-Length, Transfer-Encoding other than exactly chunked, obs-fold, bare CR or LF, a malformed chunk); the connection is closed' },
  REQUEST_TARGET_INVALID: { status: 400, retriable: false, title: 'The request target is not a path, is an absolute URL naming another authority than the Host header, holds a fragment, or the request has no or several Host headers' },
  BODY_NOT_ALLOWED: { status: 400, retriable: false, title: 'A GET, HEAD, DELETE, OPTIONS or TRACE request carries a body on a gateway route that does not accept one' },
  HEADERS_TOO_LARGE: { status: 431, retriable: false, title: 'The request line and headers exceed the gateway\'s limit' },
  EXPECTATION_FAILED: { status: 417, retriable: false, title: 'The request has an Expect header other than 100-continue' },
  UPSTREAM_UNAVAILABLE: { status: 502, retriable: true, title: 'The upstream application cannot be connected to; nothing was sent to it' },
  UPSTREAM_TIMEOUT: { status: 504, retriable: false, title: 'The upstream application did not answer in time or dropped the connection after the request was sent; it may have acted on it' },
  UPSTREAM_RESPONSE_INVALID: { status: 502, retriable: false, title: 'The upstream response of a route with response selectors cannot be decoded, is not JSON, or exceeds the limit' },
} as const satisfies Record<string, { status: number; retriable: boolean; title: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOG;

/** One offending element. Never carries a value: a pointer and a reason only. */
export interface ErrorDetail {
  code: ErrorCode;
  /** JSON pointer into the request body (or the config file) */
  pointer: string;
  message: string;
  request?: string;
  instance?: number;
  className?: string;
  propertyName?: string;
}

export class VeilError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retriable: boolean;
  readonly details: readonly ErrorDetail[];

  constructor(code: ErrorCode, message: string, details: readonly ErrorDetail[] = [], options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'VeilError';
    this.code = code;
    this.status = ERROR_CATALOG[code].status;
    this.retriable = ERROR_CATALOG[code].retriable;
    this.details = details;
  }

  toJSON(): { code: ErrorCode; message: string; retriable: boolean; details: readonly ErrorDetail[] } {
    return { code: this.code, message: this.message, retriable: this.retriable, details: this.details };
  }
}

/**
 * Raised by a transformer for one value. The engine turns it into an ErrorDetail with the
 * request guid and instance index; its message must describe the problem, never the value.
 */
export class ValueError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'ValueError';
    this.code = code;
  }
}

/**
 * The engine checks a call in stages (shape, identifiers, authorization, fields, values) and stops
 * at the first stage with problems, so the details of one error share a status; the first leads.
 */
export function combine(details: readonly ErrorDetail[]): VeilError {
  const first = details[0];
  if (!first) throw new Error('combine() needs at least one detail');
  const summary = details.length === 1 ? first.message : `${details.length} problems in the call; the first: ${first.message}`;
  return new VeilError(first.code, summary, details);
}
