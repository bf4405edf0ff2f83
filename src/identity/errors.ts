import { layerErrorType } from '../engine/index.ts';
import { IDENTITY_ERRORS, OAUTH_ERRORS } from '../errors/codes.ts';

export type IdentityErrorCode = keyof typeof IDENTITY_ERRORS;
export type OAuthErrorCode = keyof typeof OAUTH_ERRORS;

/**
 * An error of tokens and rate limits: one of its codes, or at the token endpoint one of OAuth's
 * (OAuthError), with the status, title and retriable of its catalog.
 */
export class IdentityError extends layerErrorType({ ...IDENTITY_ERRORS, ...OAUTH_ERRORS }) {}

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

/**
 * A refusal of the token endpoint (RFC 6749 §5.2): identity's error type with one of OAuth's codes,
 * which the token route answers as OAuth clients expect (`{"error", "error_description"}`, the
 * status of OAUTH_ERRORS), never as problem details; slow_down with the seconds to wait.
 */
export class OAuthError extends IdentityError {
  declare readonly code: OAuthErrorCode;
  readonly retryAfter?: number;
  constructor(code: OAuthErrorCode, description: string, retryAfterSeconds?: number) {
    super(code, description);
    if (retryAfterSeconds !== undefined) this.retryAfter = retryAfterSeconds;
  }
}
