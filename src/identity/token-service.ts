import { randomUUID } from 'node:crypto';
import type { IdentityConfig } from './identity-config.ts';
import type { JwtSigner } from '../keystore/index.ts';
import { verifyClientSecret } from './client-secret.ts';
import { OAuthError } from './errors.ts';
import { RateLimiter } from './rate-limiter.ts';
import { ACCESS_TOKEN_TYP } from './token-verifier.ts';

export interface Client {
  secretHash: string;
  roles: readonly string[];
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
}

/**
 * OAuth 2.0 client credentials (RFC 6749 §4.4). Issues RFC 9068 access tokens: ES256 JWTs with
 * typ at+jwt and iss, sub (= client_id), aud, exp, iat, jti, client_id and roles. Failed
 * authentications are rate-limited per client id and per address; unknown clients cost the same
 * scrypt work as known ones so timing does not tell which client ids exist.
 */
export class TokenService {
  private readonly clients: ReadonlyMap<string, Client>;
  private readonly clientFailures: RateLimiter;
  /** per address, ten times looser: many clients may share one address behind a proxy */
  private readonly addressFailures: RateLimiter;
  private readonly options: { identity: IdentityConfig; issuer: string; signer: JwtSigner; now: () => Date };
  private readonly decoyHash: Promise<string>;

  constructor(options: {
    identity: IdentityConfig;
    issuer: string;
    signer: JwtSigner;
    now: () => Date;
    /** failed authentications allowed per minute per client id and per address */
    failuresPerMinute: number;
    /** clients beside the configured ones (the development client) */
    extraClients?: ReadonlyMap<string, Client>;
    /** a hash of a random secret, verified against when the client id is unknown */
    decoyHash: Promise<string>;
  }) {
    this.options = options;
    this.clients = new Map([...Object.entries(options.identity.clients), ...(options.extraClients ?? [])]);
    const now = () => options.now().getTime();
    this.clientFailures = new RateLimiter({ rate: options.failuresPerMinute / 60, burst: options.failuresPerMinute, now });
    this.addressFailures = new RateLimiter({ rate: (options.failuresPerMinute * 10) / 60, burst: options.failuresPerMinute * 10, now });
    this.decoyHash = options.decoyHash;
  }

  async issue(form: { grant_type?: string; client_id?: string; client_secret?: string; scope?: string }, address: string): Promise<TokenResponse> {
    if (!form.grant_type) throw new OAuthError('invalid_request', 'grant_type is required');
    if (form.grant_type !== 'client_credentials') throw new OAuthError('unsupported_grant_type', 'only client_credentials is supported');
    if (!form.client_id || !form.client_secret) throw new OAuthError('invalid_request', 'client_id and client_secret are required');
    const wait = Math.max(this.clientFailures.wait(form.client_id), this.addressFailures.wait(address));
    if (wait > 0) throw new OAuthError('slow_down', 'too many failed authentications; retry later', Math.ceil(wait));
    const client = this.clients.get(form.client_id);
    const ok = await verifyClientSecret(form.client_secret, client?.secretHash ?? (await this.decoyHash));
    if (!client || !ok) {
      this.clientFailures.take(form.client_id);
      this.addressFailures.take(address);
      throw new OAuthError('invalid_client', 'client authentication failed');
    }
    const { identity, issuer, signer, now } = this.options;
    const iat = Math.floor(now().getTime() / 1000);
    const token = await signer.sign(
      {
        iss: issuer,
        sub: form.client_id,
        aud: identity.audience,
        iat,
        nbf: iat,
        exp: iat + identity.tokenTtlSeconds,
        jti: randomUUID(),
        client_id: form.client_id,
        roles: [...client.roles],
      },
      ACCESS_TOKEN_TYP,
    );
    return { access_token: token, token_type: 'Bearer', expires_in: identity.tokenTtlSeconds };
  }
}
