import { VeilError } from '../engine/errors.ts';

/** 401s never say more than the code: which check failed is logged, not returned. */
export const tokenMissing = () => new VeilError('TOKEN_MISSING', 'the call needs Authorization: Bearer <access token>');
export const tokenInvalid = (why: string) => new VeilError('TOKEN_INVALID', `the bearer token is not acceptable (${why})`);
export const tokenExpired = () => new VeilError('TOKEN_EXPIRED', 'the bearer token has expired or is not yet valid');
