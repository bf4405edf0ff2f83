import { decodeJwt } from 'jose';
import { KafkaError } from './kafka-error.ts';
import type { Secret } from './secret.ts';

export interface OidcSettings {
  tokenEndpoint: URL;
  clientId: string;
  clientSecret: Secret;
  scope?: string;
  /** SASL extensions sent with the token (Confluent Cloud: logicalCluster, identityPoolId) */
  extensions: Record<string, string>;
}

export interface OidcToken {
  value: string;
  /** when it expires (ms since the epoch) */
  expiresAt: number;
  /** its subject (the principal brokers see), else the client id */
  principal: string;
  extensions: Record<string, string>;
}

/** Tokens for SASL/OAUTHBEARER from an OIDC token endpoint (client credentials), fetched when the last one is 80% through its life. */
export interface OidcTokenSource {
  readonly clientId: string;
  token(): Promise<OidcToken>;
}

const FETCH_TIMEOUT_MS = 10_000;
/** a token is renewed once this share of its lifetime has passed (Kafka's Java client: 0.8) */
const REFRESH_AT = 0.8;

/**
 * The OAuth 2.0 client credentials grant (RFC 6749 §4.4) with the client authenticated by HTTP
 * Basic (§2.3.1, which every server must accept), as Kafka's Java OAuthBearerLoginCallbackHandler
 * sends it. Both client adapters take their tokens here (librdkafka built here has no libcurl, so
 * its own OIDC is not there; kafkajs has none). One request at a time; the token is shared until
 * it is due for renewal. The secret never leaves the request; an answer's body is never quoted.
 */
export function oidcTokenSource(settings: OidcSettings, fetchImpl: typeof fetch = fetch, now: () => number = Date.now): OidcTokenSource {
  let current: { token: OidcToken; renewAt: number } | undefined;
  let pending: Promise<OidcToken> | undefined;
  const request = async (): Promise<OidcToken> => {
    const startedAt = now();
    const token = await fetchToken(settings, fetchImpl, startedAt);
    current = { token, renewAt: startedAt + (token.expiresAt - startedAt) * REFRESH_AT };
    return token;
  };
  return {
    clientId: settings.clientId,
    token() {
      if (current && now() < current.renewAt) return Promise.resolve(current.token);
      return (pending ??= request().finally(() => (pending = undefined)));
    },
  };
}

async function fetchToken(settings: OidcSettings, fetchImpl: typeof fetch, startedAt: number): Promise<OidcToken> {
  const body = new URLSearchParams({ grant_type: 'client_credentials', ...(settings.scope ? { scope: settings.scope } : {}) });
  // RFC 6749 §2.3.1: id and secret form-urlencoded before they are joined
  const basic = Buffer.from(`${encodeURIComponent(settings.clientId)}:${encodeURIComponent(settings.clientSecret.reveal())}`).toString('base64');
  const where = `${settings.tokenEndpoint.origin}${settings.tokenEndpoint.pathname}`;
  let response: Response;
  try {
    response = await fetchImpl(settings.tokenEndpoint, {
      method: 'POST',
      body,
      redirect: 'error',
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    });
  } catch (e) {
    throw new KafkaError('TOKEN_ENDPOINT_UNAVAILABLE', `OAUTHBEARER: the token endpoint ${where} did not answer (${(e as Error).name})`, true);
  }
  const answer = (await response.json().catch(() => undefined)) as { access_token?: unknown; expires_in?: unknown; error?: unknown } | undefined;
  if (response.status === 400 || response.status === 401 || response.status === 403) {
    // invalid_client, unauthorized_client, invalid_scope: the settings are wrong, a retry cannot help
    const code = typeof answer?.error === 'string' && /^[a-z_]{1,40}$/.test(answer.error) ? answer.error : `HTTP ${response.status}`;
    throw new KafkaError('AUTHENTICATION_FAILED', `OAUTHBEARER: the token endpoint ${where} refused the client credentials (${code})`, false, { denied: true });
  }
  if (!response.ok || typeof answer?.access_token !== 'string' || answer.access_token === '') {
    throw new KafkaError(
      'TOKEN_ENDPOINT_UNAVAILABLE',
      `OAUTHBEARER: the token endpoint ${where} answered HTTP ${response.status} without a token`,
      response.status >= 500 || response.status === 429,
    );
  }
  return token(answer.access_token, answer.expires_in, settings, startedAt, where);
}

function token(value: string, expiresIn: unknown, settings: OidcSettings, startedAt: number, where: string): OidcToken {
  let claims: { exp?: number; sub?: string } = {};
  try {
    claims = decodeJwt(value);
  } catch {
    // an opaque token: its lifetime comes from expires_in alone
  }
  const ends = [
    typeof expiresIn === 'number' && expiresIn > 0 ? startedAt + expiresIn * 1000 : undefined,
    typeof claims.exp === 'number' ? claims.exp * 1000 : undefined,
  ].filter((x): x is number => x !== undefined);
  if (ends.length === 0)
    throw new KafkaError('OAUTHBEARER_TOKEN_INVALID', `OAUTHBEARER: the token from ${where} says neither expires_in nor exp`, false, { denied: true });
  const expiresAt = Math.min(...ends);
  if (expiresAt <= startedAt)
    throw new KafkaError('OAUTHBEARER_TOKEN_INVALID', `OAUTHBEARER: the token from ${where} has already expired`, false, { denied: true });
  return { value, expiresAt, principal: typeof claims.sub === 'string' && claims.sub ? claims.sub : settings.clientId, extensions: settings.extensions };
}
