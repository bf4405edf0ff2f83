/**
 * Typed errors of veil/client. A failure carries veil's stable code (docs/errors.md) when the
 * service answered with problem details, or one of the client's own codes below when it did not
 * (network, deadline, token endpoint, malformed answer, unsupported input). Messages are built
 * from codes, titles and pointers only: never from a value, cleartext or protected.
 */

/** The client's own codes; docs/errors.md lists them under "Client errors (veil/client)". */
export const CLIENT_ERROR_CATALOG = {
  NETWORK_ERROR: { retriable: true, title: 'The service could not be reached, or the connection broke before an answer' },
  ATTEMPT_TIMEOUT: { retriable: true, title: 'One attempt took longer than the attempt timeout' },
  DEADLINE_EXCEEDED: { retriable: false, title: 'The operation did not complete within its deadline (attempts and waits included)' },
  ABORTED: { retriable: false, title: "The caller's AbortSignal cancelled the operation" },
  TOKEN_REFUSED: { retriable: false, title: 'The token endpoint refused the client credentials (RFC 6749 error in oauthError)' },
  HTTP_ERROR: { retriable: false, title: 'The service answered with an error status but without problem details' },
  RESPONSE_INVALID: { retriable: false, title: "The service's answer does not match the transform response contract" },
  FIELD_NOT_STRING: { retriable: false, title: 'A mapped field holds something other than a string (numbers, objects and arrays are not sent)' },
  OPERATION_UNSUPPORTED: { retriable: false, title: 'The ORM operation cannot be protected by hooks (Sequelize upsert with mapped fields), so it is refused' },
  FIELD_MAP_INVALID: { retriable: false, title: 'A field map entry is not of the form Class.property, or a path is empty' },
} as const satisfies Record<string, { retriable: boolean; title: string }>;

export type ClientErrorCode = keyof typeof CLIENT_ERROR_CATALOG;

/** One offending element, as veil's problem details list it (`errors`), never with a value. */
export interface ClientErrorDetail {
  code: string;
  /** JSON pointer. For transform calls it points into the logical request (see VeilClientError.pointer). */
  pointer: string;
  message?: string;
  className?: string;
  propertyName?: string;
}

export interface VeilClientErrorInit {
  code: string;
  retriable: boolean;
  status?: number;
  pointer?: string;
  details?: readonly ClientErrorDetail[];
  /** veil's request id (`x-request-id`), to find the call in the service's logs and audit */
  requestId?: string;
  /** the RFC 6749 error of a refused token request (`invalid_client`, ...) */
  oauthError?: string;
  retryAfterMs?: number;
  cause?: unknown;
}

export class VeilClientError extends Error {
  /** veil's code (ACTION_NOT_GRANTED, RATE_LIMITED, ...) or a client code (NETWORK_ERROR, ...) */
  readonly code: string;
  readonly status: number | undefined;
  readonly retriable: boolean;
  /**
   * JSON pointer of the first offending element. For transform calls, into the logical request:
   * `/requests/<operation>/instances/<index>/value` whatever the split into calls; the field
   * helpers rewrite it to a pointer into the caller's object (`/2/email`).
   */
  readonly pointer: string | undefined;
  readonly details: readonly ClientErrorDetail[];
  readonly requestId: string | undefined;
  readonly oauthError: string | undefined;
  /** how long the service asked to wait (Retry-After), when it said */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, init: VeilClientErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'VeilClientError';
    this.code = init.code;
    this.status = init.status;
    this.retriable = init.retriable;
    this.pointer = init.pointer;
    this.details = init.details ?? [];
    this.requestId = init.requestId;
    this.oauthError = init.oauthError;
    this.retryAfterMs = init.retryAfterMs;
  }

  /** The same error with its pointers rewritten (the field helpers point into the caller's objects). */
  withPointers(rewrite: (pointer: string) => string): VeilClientError {
    if (this.pointer === undefined && this.details.length === 0) return this;
    const details = this.details.map((d) => ({ ...d, pointer: rewrite(d.pointer) }));
    const pointer = this.pointer === undefined ? undefined : rewrite(this.pointer);
    const message = this.pointer === undefined ? this.message : this.message.replace(` at ${this.pointer}`, ` at ${pointer}`);
    return new VeilClientError(message, {
      code: this.code,
      status: this.status,
      retriable: this.retriable,
      pointer,
      details,
      requestId: this.requestId,
      oauthError: this.oauthError,
      retryAfterMs: this.retryAfterMs,
      cause: this,
    });
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      status: this.status,
      retriable: this.retriable,
      pointer: this.pointer,
      details: this.details,
      message: this.message,
      requestId: this.requestId,
    };
  }
}

export function clientError(code: ClientErrorCode, extra: Omit<VeilClientErrorInit, 'code' | 'retriable'> & { retriable?: boolean } = {}): VeilClientError {
  const entry = CLIENT_ERROR_CATALOG[code];
  return new VeilClientError(messageOf(code, extra.status, extra.pointer, extra.details?.length ?? 0, entry.title), {
    ...extra,
    code,
    retriable: extra.retriable ?? entry.retriable,
  });
}

/** A message from what is safe to show: code, status, title, pointer and a count. */
export function messageOf(code: string, status: number | undefined, pointer: string | undefined, problems: number, title?: string): string {
  const head = `veil: ${code}${status === undefined ? '' : ` (HTTP ${status})`}`;
  const what = title ? `: ${title}` : '';
  const where = pointer === undefined ? '' : ` at ${pointer}`;
  const more = problems > 1 ? ` (${problems} problems)` : '';
  return `${head}${what}${where}${more}`;
}

const OAUTH_CODE = /^[\x20-\x21\x23-\x5B\x5D-\x7E]{1,64}$/;

/**
 * Maps an error answer of the service to a VeilClientError. veil's problem details give code,
 * retriable, pointer and details; the problem's `detail` text is not copied into the message
 * (only its title, which is the catalog's), so nothing the service echoed can reach a log line.
 */
export function errorFromResponse(status: number, body: unknown, headers: Headers, retryAfterMs: number | undefined): VeilClientError {
  const requestId = headers.get('x-request-id') ?? undefined;
  const problem = isObject(body) ? body : undefined;
  if (problem && typeof problem.code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(problem.code)) {
    const details = Array.isArray(problem.errors) ? problem.errors.filter(isObject).map(detailOf) : [];
    const pointer = typeof problem.pointer === 'string' ? problem.pointer : details[0]?.pointer;
    const retriable = typeof problem.retriable === 'boolean' ? problem.retriable : retriableStatus(status);
    const title = typeof problem.title === 'string' ? problem.title.slice(0, 200) : undefined;
    return new VeilClientError(messageOf(problem.code, status, pointer, details.length, title), {
      code: problem.code,
      status,
      retriable,
      pointer,
      details,
      requestId,
      retryAfterMs,
    });
  }
  if (problem && typeof problem.error === 'string' && OAUTH_CODE.test(problem.error)) {
    return clientError('TOKEN_REFUSED', { status, requestId, oauthError: problem.error, retryAfterMs, retriable: retriableStatus(status) });
  }
  return clientError('HTTP_ERROR', { status, requestId, retryAfterMs, retriable: retriableStatus(status) });
}

/** Without problem details (a proxy's answer, say), these statuses are worth another attempt. */
export function retriableStatus(status: number): boolean {
  return status === 429 || status === 502 || status === 503 || status === 504;
}

function detailOf(e: Record<string, unknown>): ClientErrorDetail {
  return {
    code: typeof e.code === 'string' ? e.code : 'UNKNOWN',
    pointer: typeof e.pointer === 'string' ? e.pointer : '',
    ...(typeof e.message === 'string' ? { message: e.message } : {}),
    ...(typeof e.className === 'string' ? { className: e.className } : {}),
    ...(typeof e.propertyName === 'string' ? { propertyName: e.propertyName } : {}),
  };
}

export function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
