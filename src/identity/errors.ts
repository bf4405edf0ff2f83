import { LayerError, type ErrorEntry, type LayerErrorOptions } from '../engine/index.ts';

/** The error codes of tokens and rate limits (src/identity). src/errors/catalog.ts gathers every layer's; docs/errors.md lists them. */
export const IDENTITY_ERRORS = {
  TOKEN_MISSING: { status: 401, retriable: false, title: 'The call carries no bearer token' },
  TOKEN_INVALID: { status: 401, retriable: false, title: 'The bearer token is malformed, not signed by a trusted issuer, or not meant for this service' },
  TOKEN_EXPIRED: { status: 401, retriable: false, title: 'The bearer token has expired or is not yet valid' },
  RATE_LIMITED: { status: 429, retriable: true, title: 'Too many calls; retry after the time given in Retry-After' },
} as const satisfies Record<string, ErrorEntry>;

export type IdentityErrorCode = keyof typeof IDENTITY_ERRORS;

/** An error of tokens and rate limits: one of its codes, with the status, title and retriable of its catalog. */
export class IdentityError extends LayerError<IdentityErrorCode> {
  constructor(code: IdentityErrorCode, message: string, options?: LayerErrorOptions) {
    super(IDENTITY_ERRORS, code, message, options);
  }
}

/** 401s never say more than the code: which check failed is logged, not returned. */
export const tokenMissing = () => new IdentityError('TOKEN_MISSING', 'the call needs Authorization: Bearer <access token>');
export const tokenInvalid = (why: string) => new IdentityError('TOKEN_INVALID', `the bearer token is not acceptable (${why})`);
export const tokenExpired = () => new IdentityError('TOKEN_EXPIRED', 'the bearer token has expired or is not yet valid');

/** 429 RATE_LIMITED with the seconds to wait, which the HTTP adapter sends as Retry-After. */
export class RateLimitedError extends IdentityError {
  readonly retryAfter: number;
  constructor(message: string, retryAfterSeconds: number) {
    super('RATE_LIMITED', message);
    this.name = 'RateLimitedError';
    this.retryAfter = retryAfterSeconds;
  }
}
