import { LayerError, type ErrorEntry, type LayerErrorOptions } from '../engine/index.ts';

/** The error codes of the admin portal (src/portal). src/errors/catalog.ts gathers every layer's; docs/errors.md lists them. */
export const PORTAL_ERRORS = {
  ADMIN_ROLE_MISSING: { status: 403, retriable: false, title: 'The signed-in admin lacks the portal role (viewer, editor, publisher, tester) this page or action needs' },
  CSRF_TOKEN_INVALID: { status: 403, retriable: false, title: 'A state-changing portal request lacks the session\'s CSRF token or carries a wrong one' },
  CROSS_ORIGIN_REFUSED: { status: 403, retriable: false, title: 'A state-changing portal request (a POST) came from another origin: its Origin header or Sec-Fetch-Site names another origin than the portal\'s own' },
  PUBLISH_REFUSED: { status: 409, retriable: false, title: 'The draft cannot be published: it is invalid, a saved test case fails, or the keystore cannot serve it' },
  DRAFT_CHANGED: { status: 409, retriable: false, title: 'The draft changed after the publisher reviewed it (the publish form carries the hash of the text shown); review it again' },
  FOUR_EYES_REQUIRED: { status: 403, retriable: false, title: 'The configuration requires four eyes: a draft cannot be published by an admin who edited it' },
  DRAFT_LIMIT_EXCEEDED: { status: 422, retriable: false, title: 'The draft exceeds a portal limit (size, key version, saved test cases, tester values)' },
  SANDBOX_BUSY: { status: 503, retriable: true, title: 'The portal sandbox (saved test cases, tester on sandbox keys) is busy, or the run exceeded its time limit' },
  SIGN_IN_RATE_LIMITED: { status: 429, retriable: true, title: 'Too many failed portal sign-ins for this client id or address; retry after the time given in Retry-After' },
  SESSIONS_FULL: { status: 503, retriable: true, title: 'The portal holds as many sessions as it may; sign in again when one ends' },
} as const satisfies Record<string, ErrorEntry>;

export type PortalErrorCode = keyof typeof PORTAL_ERRORS;

/** An error of the admin portal: one of its codes, with the status, title and retriable of its catalog. */
export class PortalError extends LayerError<PortalErrorCode> {
  constructor(code: PortalErrorCode, message: string, options?: LayerErrorOptions) {
    super(PORTAL_ERRORS, code, message, options);
  }
}
