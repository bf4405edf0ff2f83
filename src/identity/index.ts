// The identity front door: the token endpoint's service (client credentials), the verifier of
// bearer tokens (veil's own and external issuers' through JWKS) and its cache, the admin roles,
// client secrets and the development client, the identity section of the configuration and the
// rate limiter. Outside src/identity only this file (and the layer's errors.ts) is imported
// (tools/eslint-plugin-veil.js, front-doors).
export { ADMIN_ROLE_NAMES, ADMIN_ROLES, type AdminRight } from './admin-roles.ts';
export { CachingVerifier } from './caching-verifier.ts';
export { hashClientSecret } from './client-secret.ts';
export { devClient } from './dev-client.ts';
export { identityIssues, identitySchema, type IdentityConfig } from './identity-config.ts';
export { RateLimiter } from './rate-limiter.ts';
export { TokenService, type Client } from './token-service.ts';
export { TokenVerifier, type BearerVerifier, type Caller } from './token-verifier.ts';
