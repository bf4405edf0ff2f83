import type { ErrorEntry } from '../engine/index.ts';

/**
 * Every layer's error codes but the engine's (src/engine/errors.ts), each defined once, here: a
 * neutral module of data that imports no layer. Each layer's error type is made from its table
 * (src/<layer>/errors.ts, by the engine's layerErrorType); catalog.ts gathers them all for the
 * OpenAPI document, the portal's error pages and the docs check; docs/errors.md lists them.
 */

/** The error codes of the keystore and the KEK behind it (src/keystore, src/keystore/kms). */
export const KEYSTORE_ERRORS = {
  KEYSTORE_INVALID: { status: 500, retriable: false, title: 'The keystore cannot be read or fails authentication' },
  KMS_UNAVAILABLE: {
    status: 503,
    retriable: true,
    title: 'The KMS holding the key-encryption key cannot be reached (and keys it unwrapped have outlived their cache lifetime)',
  },
  KMS_REFUSED: {
    status: 500,
    retriable: false,
    title: 'The KMS refuses to wrap or unwrap: wrong key-encryption key, credentials, context, or tampered material',
  },
  KEY_NOT_FOUND: { status: 404, retriable: false, title: 'No key with that id' },
  KEY_EXISTS: { status: 409, retriable: false, title: 'A key with that id exists already' },
  KEY_MATERIAL_INVALID: { status: 400, retriable: false, title: 'Imported key material has the wrong size or encoding' },
  KEYSET_CONFLICT: {
    status: 409,
    retriable: false,
    title: 'A change to the key set lost the race to changes by other processes (sharing the data dir or the control store): make it again',
  },
} as const satisfies Record<string, ErrorEntry>;

/** The error codes of the shared control store (src/control). */
export const CONTROL_ERRORS = {
  CONTROL_STORE_UNAVAILABLE: {
    status: 503,
    retriable: true,
    title: 'The shared control store (the Kafka topic of configuration versions and key sets) cannot be read or written',
  },
} as const satisfies Record<string, ErrorEntry>;

/** The error codes of the subject-key store (src/subjects, issue 29); SUBJECT_ERASED, SUBJECT_ID_INVALID and SUBJECT_REQUIRED are the engine's. */
export const SUBJECTS_ERRORS = {
  SUBJECT_STORE_UNAVAILABLE: {
    status: 503,
    retriable: true,
    title: 'The subject-key store cannot be read or written, or this process has not caught up with it recently enough to serve subject keys',
  },
  SUBJECT_STORE_NOT_SHARED: {
    status: 500,
    retriable: false,
    title:
      'The subject-key store is local (subjects.db in the data dir) where it would split or lose subject keys: the process shares a control store with others (VEIL_CONTROL_STORE=kafka) or its data dir goes with it (VEIL_DATA_DIR_EPHEMERAL=true); VEIL_SUBJECT_STORE=kafka shares them',
  },
  ERASURE_REQUEST_INVALID: {
    status: 400,
    retriable: false,
    title:
      'An erasure or status request is not an object with the subject id and, to erase, a reason of 1 to 500 characters without control characters that does not name the subject; or the eraser named is not acceptable',
  },
  ERASURE_NOT_PERMITTED: {
    status: 403,
    retriable: false,
    title: "The caller's token lacks the admin right a subject administration call needs: admin-publisher to erase, any admin role to read a subject's status",
  },
  RECEIPT_INVALID: {
    status: 422,
    retriable: false,
    title:
      "An erasure receipt is not a compact JWS of veil's receipt type signed by a version of the key set's veil-receipts key, or its claims do not have the receipt's shape",
  },
} as const satisfies Record<string, ErrorEntry>;

/** The error codes of tokens and rate limits (src/identity). */
export const IDENTITY_ERRORS = {
  TOKEN_MISSING: { status: 401, retriable: false, title: 'The call carries no bearer token' },
  TOKEN_INVALID: { status: 401, retriable: false, title: 'The bearer token is malformed, not signed by a trusted issuer, or not meant for this service' },
  TOKEN_EXPIRED: { status: 401, retriable: false, title: 'The bearer token has expired or is not yet valid' },
  RATE_LIMITED: { status: 429, retriable: true, title: 'Too many calls; retry after the time given in Retry-After' },
} as const satisfies Record<string, ErrorEntry>;

/**
 * OAuth 2.0's own error codes (RFC 6749 §5.2), which the token endpoint answers with in OAuth's
 * body (`{"error", "error_description"}`), never as problem details: identity's error type takes
 * them beside IDENTITY_ERRORS (OAuthError, src/identity/errors.ts). Not in the catalog of problem
 * codes (catalog.ts); docs/errors.md lists them apart.
 */
export const OAUTH_ERRORS = {
  invalid_request: {
    status: 400,
    retriable: false,
    title: 'The token request lacks a parameter, repeats one, is not form-encoded, or authenticates the client twice or inconsistently',
  },
  invalid_client: { status: 401, retriable: false, title: 'Client authentication failed: an unknown client, a wrong secret, or malformed Basic credentials' },
  unsupported_grant_type: { status: 400, retriable: false, title: 'The grant type is not client_credentials' },
  invalid_scope: { status: 400, retriable: false, title: 'The requested scope is invalid (veil ignores scope: the roles come from the client configuration)' },
  slow_down: { status: 429, retriable: true, title: 'Too many failed authentications for the client id or address; retry after the time given in Retry-After' },
} as const satisfies Record<string, ErrorEntry>;

/** The error codes of the audit sinks (src/audit). */
export const AUDIT_ERRORS = {
  AUDIT_UNAVAILABLE: { status: 503, retriable: true, title: 'The audit sink cannot record the call, so the call was refused' },
} as const satisfies Record<string, ErrorEntry>;

/** The error codes of the Kafka pipelines and the unprotect responder (src/stream); records fail with StreamError (stream-error.ts). */
export const STREAM_ERRORS = {
  RECORD_MALFORMED: { status: 422, retriable: false, title: 'A Kafka record cannot be decoded (not JSON, not Avro wire format, or not matching its schema)' },
  RECORD_INVALID: {
    status: 422,
    retriable: false,
    title:
      'A Kafka record does not validate against its schema (a json-schema pipeline with validate: true); the message names the instance path and keyword, never the value',
  },
  SCHEMA_UNKNOWN: { status: 422, retriable: false, title: 'The schema id of an Avro record is not in the schema registry' },
  FIELD_MISSING: { status: 422, retriable: false, title: 'A mapped field is absent or null and the pipeline dead-letters such records' },
  SCHEMA_PATH_UNKNOWN: {
    status: 422,
    retriable: false,
    title: "A mapped path does not exist in the record's writer schema (a renamed field, a typo): the schema version is refused for the pipeline",
  },
  KEY_MISSING: { status: 422, retriable: false, title: 'The pipeline protects record keys and the record has none' },
  RECORD_TOO_LARGE: { status: 422, retriable: false, title: 'The protected record is larger than the clean topic accepts (its max.message.bytes)' },
  DEAD_LETTER_FAILED: {
    status: 503,
    retriable: false,
    title: 'A dead letter cannot be written (larger than the dead-letter topic accepts); the pipeline stops rather than skip the record',
  },
  TRANSACTION_ABORTED: { status: 503, retriable: true, title: 'A Kafka transaction failed and was aborted; the batch is read again from the committed offset' },
  REGISTRY_UNAVAILABLE: { status: 503, retriable: true, title: 'The schema registry cannot be reached' },
  DEADLINE_EXCEEDED: { status: 504, retriable: false, title: 'The request arrived after its deadline and was not processed' },
  REPLY_TOPIC_NOT_ALLOWED: { status: 400, retriable: false, title: 'The request names no reply-to topic, or one the configuration does not allow' },
} as const satisfies Record<string, ErrorEntry>;

/** The error codes of the admin portal (src/portal). */
export const PORTAL_ERRORS = {
  ADMIN_ROLE_MISSING: {
    status: 403,
    retriable: false,
    title: 'The signed-in admin lacks the portal role (viewer, editor, publisher, tester) this page or action needs',
  },
  CSRF_TOKEN_INVALID: { status: 403, retriable: false, title: "A state-changing portal request lacks the session's CSRF token or carries a wrong one" },
  CROSS_ORIGIN_REFUSED: {
    status: 403,
    retriable: false,
    title: "A state-changing portal request (a POST) came from another origin: its Origin header or Sec-Fetch-Site names another origin than the portal's own",
  },
  PUBLISH_REFUSED: {
    status: 409,
    retriable: false,
    title: 'The draft cannot be published: it is invalid, a saved test case fails, or the keystore cannot serve it',
  },
  DRAFT_CHANGED: {
    status: 409,
    retriable: false,
    title: 'The draft changed after the publisher reviewed it (the publish form carries the hash of the text shown); review it again',
  },
  FOUR_EYES_REQUIRED: { status: 403, retriable: false, title: 'The configuration requires four eyes: a draft cannot be published by an admin who edited it' },
  DRAFT_LIMIT_EXCEEDED: { status: 422, retriable: false, title: 'The draft exceeds a portal limit (size, key version, saved test cases, tester values)' },
  SANDBOX_BUSY: {
    status: 503,
    retriable: true,
    title: 'The portal sandbox (saved test cases, tester on sandbox keys) is busy, or the run exceeded its time limit',
  },
  SIGN_IN_RATE_LIMITED: {
    status: 429,
    retriable: true,
    title: 'Too many failed portal sign-ins for this client id or address; retry after the time given in Retry-After',
  },
  SESSIONS_FULL: { status: 503, retriable: true, title: 'The portal holds as many sessions as it may; sign in again when one ends' },
} as const satisfies Record<string, ErrorEntry>;

/** The error codes of the database door (src/db): the PL/Python client raises them inside PostgreSQL (src/db/plpython), so they have no error type here. */
export const DB_ERRORS = {
  DB_NOT_CONFIGURED: { status: 500, retriable: false, title: 'The database has no veil URL and client credentials (veil db configure)' },
  DB_ROLE_UNMAPPED: { status: 403, retriable: false, title: 'The database role is not mapped to a veil role, or maps to several' },
  DB_CREDENTIALS_REFUSED: { status: 401, retriable: false, title: "veil's token endpoint refused the database's client credentials" },
  DB_SERVICE_UNAVAILABLE: {
    status: 503,
    retriable: true,
    title: 'veil cannot be reached from the database, or answered something that is not a transform response',
  },
  DB_RATE_LIMITED: { status: 429, retriable: true, title: 'The database role has sent veil more values per minute than veil.rate_limits allows' },
  DB_LEASE_UNAVAILABLE: {
    status: 409,
    retriable: false,
    title: 'veil leases no key for this field: leases are off, or its protect sequence is not one AES-SIV or AES-GCM step under a shared key',
  },
  DB_LEASE_INVALID: { status: 400, retriable: false, title: 'A lease report names a lease this connection does not hold, or more values than its budget' },
  DB_ARGUMENT_INVALID: {
    status: 400,
    retriable: false,
    title: 'A veil database function was called with a NULL class or property, arrays of different lengths, or a mapped column that is not text',
  },
} as const satisfies Record<string, ErrorEntry>;

/** The error codes of the gateway (src/gateway). */
export const GATEWAY_ERRORS = {
  BODY_NOT_JSON: {
    status: 400,
    retriable: false,
    title: 'The body of a route with field selectors is not JSON, or cannot be decoded with its Content-Encoding',
  },
  CONTENT_ENCODING_UNSUPPORTED: {
    status: 415,
    retriable: false,
    title: 'The body of a route with field selectors has a Content-Encoding other than gzip, br, deflate or identity',
  },
  FIELD_SHAPE_MISMATCH: {
    status: 422,
    retriable: false,
    title: 'A selected request-body field holds an object or array, or sits under a value of the wrong shape, so it cannot be protected',
  },
  PATH_NOT_CANONICAL: {
    status: 400,
    retriable: false,
    title:
      'The request path has dot or empty segments (also once decoded), a backslash, an encoded slash, backslash, NUL or semicolon, a malformed percent-encoding, or ; parameters its route does not accept, which the gateway does not route',
  },
  REQUEST_FRAMING_INVALID: {
    status: 400,
    retriable: false,
    title:
      'The request cannot be parsed unambiguously (both Content-Length and Transfer-Encoding, a repeated or malformed Content-Length, Transfer-Encoding other than exactly chunked, obs-fold, bare CR or LF, a malformed chunk); the connection is closed',
  },
  REQUEST_TARGET_INVALID: {
    status: 400,
    retriable: false,
    title:
      'The request target is not a path, is an absolute URL naming another authority than the Host header, holds a fragment, or the request has no or several Host headers',
  },
  BODY_NOT_ALLOWED: {
    status: 400,
    retriable: false,
    title: 'A GET, HEAD, DELETE, OPTIONS or TRACE request carries a body on a gateway route that does not accept one',
  },
  HEADERS_TOO_LARGE: { status: 431, retriable: false, title: "The request line and headers exceed the gateway's limit" },
  EXPECTATION_FAILED: { status: 417, retriable: false, title: 'The request has an Expect header other than 100-continue' },
  UPSTREAM_UNAVAILABLE: { status: 502, retriable: true, title: 'The upstream application cannot be connected to; nothing was sent to it' },
  UPSTREAM_TIMEOUT: {
    status: 504,
    retriable: false,
    title: 'The upstream application did not answer in time or dropped the connection after the request was sent; it may have acted on it',
  },
  UPSTREAM_RESPONSE_INVALID: {
    status: 502,
    retriable: false,
    title: 'The upstream response of a route with response selectors cannot be decoded, is not JSON, or exceeds the limit',
  },
} as const satisfies Record<string, ErrorEntry>;

/** The error codes of what every door refuses of a request before the engine sees it: the HTTP service, the gateway, the stream (the unmapped guard). */
export const DOOR_ERRORS = {
  CONTENT_TYPE_UNSUPPORTED: { status: 415, retriable: false, title: 'The body must be application/json' },
  BODY_TOO_LARGE: { status: 413, retriable: false, title: 'The body exceeds the size limit' },
  LIMIT_EXCEEDED: { status: 413, retriable: false, title: 'The call holds more requests or instances than the limit' },
  REQUEST_TIMEOUT: { status: 408, retriable: false, title: 'The request body did not arrive within the body read timeout' },
  METHOD_NOT_ALLOWED: { status: 405, retriable: false, title: 'The resource does not support the method' },
  UNMAPPED_PERSONAL_DATA: {
    status: 422,
    retriable: false,
    title:
      'A value at a path the mapping does not name looks like personal data (the unmapped guard): refused; the error names the path and the kind, never the value',
  },
} as const satisfies Record<string, ErrorEntry>;
