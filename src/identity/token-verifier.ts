import { createLocalJWKSet, createRemoteJWKSet, decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { VeilError, type Identity } from '../engine/index.ts';
import type { IdentityConfig } from './identity-config.ts';
import type { JwtSigner } from '../keystore/index.ts';
import { tokenExpired, tokenInvalid, tokenMissing } from './errors.ts';

export const ACCESS_TOKEN_TYP = 'at+jwt';
const MAX_TOKEN_CHARS = 8192;
export const CLOCK_TOLERANCE_S = 30;

/** Verifies an Authorization header value into the caller it names. */
export interface BearerVerifier {
  verifyHeader(authorization: string | undefined): Promise<Caller>;
}

/** Who called: the verified token's subject, client and roles. */
export interface Caller extends Identity {
  subject: string;
  clientId: string;
  issuer: string;
  /** the token's exp, seconds since the epoch */
  expiresAt: number;
}

interface Trusted {
  issuer: string;
  audience: string;
  algorithms: string[];
  keys: () => JWTVerifyGetKey;
  roles: (payload: JWTPayload) => unknown;
  typ?: string;
}

/**
 * Verifies bearer tokens: veil's own (ES256, typ at+jwt, its JWKS) and those of configured external
 * providers (their JWKS URL, issuer, audience, algorithms, roles claim). The issuer claim picks
 * which trust applies; the signature, algorithm allow-list, `aud`, `exp`/`nbf` (30 s tolerance),
 * `crit` and size are then checked by jose. `alg: none` and HMAC algorithms are never accepted.
 */
export class TokenVerifier implements BearerVerifier {
  private readonly trusted = new Map<string, Trusted>();
  private readonly now: () => Date;

  constructor(options: { identity: IdentityConfig; issuer: string; signer: JwtSigner; now: () => Date }) {
    this.now = options.now;
    let localSet: { count: number; set: JWTVerifyGetKey } | undefined;
    this.trusted.set(options.issuer, {
      issuer: options.issuer,
      audience: options.identity.audience,
      algorithms: ['ES256'],
      typ: ACCESS_TOKEN_TYP,
      keys: () => {
        const jwks = options.signer.jwks();
        if (!localSet || localSet.count !== jwks.keys.length) localSet = { count: jwks.keys.length, set: createLocalJWKSet(jwks) };
        return localSet.set;
      },
      roles: (p) => p.roles,
    });
    for (const ext of options.identity.external) {
      if (this.trusted.has(ext.issuer)) throw new VeilError('CONFIG_INVALID', `external provider issuer ${ext.issuer} is veil's own issuer`);
      const remote = createRemoteJWKSet(new URL(ext.jwksUrl), { timeoutDuration: 5000, cooldownDuration: 30_000 });
      this.trusted.set(ext.issuer, {
        issuer: ext.issuer,
        audience: ext.audience,
        algorithms: ext.algorithms,
        keys: () => remote,
        roles: (p) => ext.rolesClaim.split('.').reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), p),
      });
    }
  }

  /** Verifies an Authorization header value; throws TOKEN_MISSING / TOKEN_INVALID / TOKEN_EXPIRED. */
  async verifyHeader(authorization: string | undefined): Promise<Caller> {
    if (authorization === undefined || authorization === '') throw tokenMissing();
    const match = /^Bearer ([A-Za-z0-9_.~+/-]+=*)$/i.exec(authorization);
    if (!match) throw tokenInvalid('not a Bearer token');
    return this.verify(match[1]!);
  }

  async verify(token: string): Promise<Caller> {
    if (token.length > MAX_TOKEN_CHARS) throw tokenInvalid('too large');
    let issuer: unknown;
    try {
      decodeProtectedHeader(token);
      issuer = decodeJwt(token).iss;
    } catch {
      throw tokenInvalid('not a JWT');
    }
    const trust = typeof issuer === 'string' ? this.trusted.get(issuer) : undefined;
    if (!trust) throw tokenInvalid('unknown issuer');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, trust.keys(), {
        issuer: trust.issuer,
        audience: trust.audience,
        algorithms: trust.algorithms,
        ...(trust.typ ? { typ: trust.typ } : {}),
        currentDate: this.now(),
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (e) {
      if (e instanceof errors.JWTExpired) throw tokenExpired();
      if (e instanceof errors.JWTClaimValidationFailed && e.claim === 'nbf') throw tokenExpired();
      throw tokenInvalid(e instanceof errors.JOSEError ? e.code : 'verification failed');
    }
    const roles = trust.roles(payload);
    if (roles !== undefined && !(Array.isArray(roles) && roles.every((r) => typeof r === 'string'))) throw tokenInvalid('roles claim is not a list of strings');
    const clientId = typeof payload.client_id === 'string' ? payload.client_id : payload.sub!;
    return { subject: payload.sub!, clientId, issuer: trust.issuer, roles: (roles as string[] | undefined) ?? [], expiresAt: payload.exp! };
  }
}
