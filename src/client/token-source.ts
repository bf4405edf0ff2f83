import { clientError, isObject } from './errors.ts';
import { postOnce, type FetchLike } from './http.ts';
import { withRetry, type Clock, type RetryPolicy } from './retry.ts';

/** Where the client's bearer tokens come from. */
export interface TokenSource {
  /** a token valid for a while yet: the cached one, or a fresh one */
  get(): Promise<string>;
  /** the service refused `token` (401): forget it, so the next get() fetches a new one */
  invalidate(token: string): void;
}

export interface ClientCredentialsOptions {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  /** refresh this long before the token expires (default 30 s, at most half its lifetime) */
  refreshSkewMs?: number;
  /** lifetime assumed when the token response has no expires_in (default 60 s) */
  defaultLifetimeMs?: number;
  fetch: FetchLike;
  clock: Clock;
  retry: RetryPolicy;
  attemptTimeoutMs: number;
}

interface Cached {
  token: string;
  refreshAt: number;
  expiresAt: number;
}

/**
 * OAuth 2.0 client credentials (RFC 6749 §4.4, client_secret_post, spec §4.2). One token is
 * cached and refreshed `refreshSkewMs` before it expires; concurrent callers share one token
 * request (single flight). If a refresh fails while the cached token is still valid, that token
 * is used until it expires. The secret is sent in the form body only, never logged or shown.
 */
export function clientCredentials(options: ClientCredentialsOptions): TokenSource {
  const skewMs = options.refreshSkewMs ?? 30_000;
  const defaultLifetimeMs = options.defaultLifetimeMs ?? 60_000;
  let cached: Cached | undefined;
  let pending: Promise<string> | undefined;

  const request = async (): Promise<string> => {
    const startedAt = options.clock.now();
    const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: options.clientId, client_secret: options.clientSecret }).toString();
    const answer = await withRetry(options.retry, options.clock, undefined, (ctx) =>
      postOnce(
        options.tokenUrl,
        {
          headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body,
        },
        ctx,
        options,
      ),
    );
    const json = answer.body;
    if (!isObject(json) || typeof json.access_token !== 'string' || json.access_token.length === 0) {
      throw clientError('RESPONSE_INVALID', { status: answer.status });
    }
    const lifetimeMs = typeof json.expires_in === 'number' && json.expires_in > 0 ? json.expires_in * 1000 : defaultLifetimeMs;
    // counted from when the request left, so a slow answer cannot stretch the token's life
    cached = { token: json.access_token, expiresAt: startedAt + lifetimeMs, refreshAt: startedAt + lifetimeMs - Math.min(skewMs, lifetimeMs / 2) };
    return cached.token;
  };

  return {
    async get() {
      const now = options.clock.now();
      if (cached && now < cached.refreshAt) return cached.token;
      pending ??= request().finally(() => {
        pending = undefined;
      });
      const stillValid = cached && now < cached.expiresAt ? cached.token : undefined;
      if (stillValid === undefined) return pending;
      return pending.catch(() => stillValid);
    },
    invalidate(token) {
      // only the token that was refused: a newer one fetched meanwhile stays
      if (cached?.token === token) cached = undefined;
    },
  };
}
