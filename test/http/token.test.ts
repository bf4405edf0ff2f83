import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import type { TestService } from '../helpers/http-service.ts';
import { startTestService } from '../helpers/http-service.ts';
import { SECRET, call, clientsYaml, expectProblem, protectEmailBody, startWith, tokenRequest, transform, type Reply } from './support.ts';

/**
 * POST /connect/token (spec §4.2, §5; RFC 6749 §4.4 client credentials, §2.3.1 client auth,
 * §5.1/§5.2 responses), the OpenID discovery document and the JWKS (RFC 7517), and the access
 * tokens themselves (RFC 9068 JWT profile).
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

const ISSUER = 'http://veil.test';
const SUPPORT = { id: 'support-app', secret: 'zz-client-secret-support-7f3a9c' };
/** a secret with every character that needs form-encoding inside HTTP Basic */
const ODD = { id: 'odd.client_1', secret: 'zz:se+cr%et 4111/ü=&' };

const services: TestService[] = [];
let svc: TestService;

beforeAll(async () => {
  svc = await startWith(
    await clientsYaml({ [SUPPORT.id]: { secret: SUPPORT.secret, roles: ['support'] }, [ODD.id]: { secret: ODD.secret, roles: ['ingest'] } }),
  );
  services.push(svc);
});

afterAll(async () => {
  await Promise.all(services.map((s) => s.close()));
});

function devSecret(s: TestService = svc): string {
  return s.service.devClient!.secret;
}

/** form-urlencoding of RFC 6749 Appendix B, as Basic credentials require (§2.3.1) */
function formEncode(s: string): string {
  return new URLSearchParams({ x: s }).toString().slice(2);
}

function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${formEncode(id)}:${formEncode(secret)}`).toString('base64')}`;
}

function expectTokenResponse(reply: Reply): string {
  expect(reply.status, reply.text).toBe(200);
  expect(reply.headers.get('content-type')).toMatch(/^application\/json\b/);
  expect(reply.headers.get('cache-control')).toBe('no-store');
  expect(reply.headers.get('pragma')).toBe('no-cache');
  expect(Object.keys(reply.json).sort()).toEqual(['access_token', 'expires_in', 'token_type']);
  expect(reply.json.token_type).toBe('Bearer');
  expect(reply.json.expires_in).toBe(900);
  expect(reply.json.access_token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  return reply.json.access_token;
}

/** An RFC 6749 §5.2 error body: only error and error_description, never the secret. */
function expectOAuthError(reply: Reply, status: number, error: string): Loose {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/^application\/json\b/);
  expect(reply.headers.get('cache-control')).toBe('no-store');
  expect(Object.keys(reply.json).sort()).toEqual(['error', 'error_description']);
  expect(reply.json.error).toBe(error);
  expect(typeof reply.json.error_description).toBe('string');
  // RFC 6749 §5.2: error_description is %x20-21 / %x23-5B / %x5D-7E
  expect(reply.json.error_description).toMatch(/^[\x20\x21\x23-\x5B\x5D-\x7E]*$/);
  for (const secret of [devSecret(), SUPPORT.secret, ODD.secret, 'zz-wrong-secret']) expect(reply.text).not.toContain(secret);
  return reply.json;
}

describe('POST /connect/token: client credentials grant', () => {
  it('issues a bearer token to form-encoded client_id and client_secret (client_secret_post)', async () => {
    const token = expectTokenResponse(await tokenRequest(svc, { grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: devSecret() }));
    const res = await transform(svc, token, protectEmailBody());
    expect(res.status).toBe(200);
  });

  it('accepts HTTP Basic client authentication with form-encoded id and secret (RFC 6749 §2.3.1)', async () => {
    expectTokenResponse(await tokenRequest(svc, { grant_type: 'client_credentials' }, { authorization: basic('veil-dev', devSecret()) }));
    const token = expectTokenResponse(await tokenRequest(svc, { grant_type: 'client_credentials' }, { authorization: basic(ODD.id, ODD.secret) }));
    expect(decodeJwt(token).client_id).toBe(ODD.id);
    // client_id in the form is allowed when it equals the Basic one
    expectTokenResponse(await tokenRequest(svc, { grant_type: 'client_credentials', client_id: ODD.id }, { authorization: basic(ODD.id, ODD.secret) }));
    // and the same odd secret works form-encoded in the body
    expectTokenResponse(await tokenRequest(svc, { grant_type: 'client_credentials', client_id: ODD.id, client_secret: ODD.secret }));
  });

  it('the token is an RFC 9068 ES256 JWT with kid, iss, sub, aud, exp, iat, jti, client_id and roles', async () => {
    const before = Math.floor(svc.clock.now.getTime() / 1000);
    const token = expectTokenResponse(await tokenRequest(svc, { grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: devSecret() }));
    const header = decodeProtectedHeader(token);
    expect(header).toEqual({ alg: 'ES256', typ: 'at+jwt', kid: 'veil-token-signing.v1' });
    const claims = decodeJwt(token);
    expect(claims.iss).toBe(ISSUER);
    expect(claims.sub).toBe('veil-dev');
    expect(claims.client_id).toBe('veil-dev');
    expect(claims.aud).toBe('veil');
    expect(claims.iat).toBe(before);
    expect(claims.exp).toBe(before + 900);
    expect(claims.nbf).toBe(before);
    expect(claims.jti).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // every role of the configuration, and the admin portal's rights
    expect([...(claims.roles as string[])].sort()).toEqual(['admin-editor', 'admin-publisher', 'admin-tester', 'admin-viewer', 'fraud', 'ingest', 'support']);
    expect(Object.keys(claims).sort()).toEqual(['aud', 'client_id', 'exp', 'iat', 'iss', 'jti', 'nbf', 'roles', 'sub']);
    // a fresh jti per token
    const again = decodeJwt(
      expectTokenResponse(await tokenRequest(svc, { grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: devSecret() })),
    );
    expect(again.jti).not.toBe(claims.jti);
  });

  it('a configured client gets exactly its configured roles', async () => {
    const token = expectTokenResponse(await tokenRequest(svc, { grant_type: 'client_credentials', client_id: SUPPORT.id, client_secret: SUPPORT.secret }));
    const claims = decodeJwt(token);
    expect(claims.sub).toBe(SUPPORT.id);
    expect(claims.roles).toEqual(['support']);
  });

  it('the Bearer scheme is case-insensitive on /transform (RFC 9110 §11.1)', async () => {
    const token = await svc.token();
    const body = protectEmailBody();
    for (const scheme of ['bearer', 'BEARER']) {
      const res = await call(`${svc.url}/transform`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `${scheme} ${token}` },
        body: JSON.stringify(body),
      });
      expect(res.status, res.text).toBe(200);
    }
  });
});

describe('POST /connect/token: errors (RFC 6749 §5.2)', () => {
  it('invalid_request: grant_type, client_id or client_secret missing', async () => {
    expectOAuthError(await tokenRequest(svc, { client_id: 'veil-dev', client_secret: devSecret() }), 400, 'invalid_request');
    expectOAuthError(await tokenRequest(svc, { grant_type: 'client_credentials', client_secret: devSecret() }), 400, 'invalid_request');
    expectOAuthError(await tokenRequest(svc, { grant_type: 'client_credentials', client_id: 'veil-dev' }), 400, 'invalid_request');
    expectOAuthError(await tokenRequest(svc, {}), 400, 'invalid_request');
  });

  it('invalid_request: a repeated parameter (RFC 6749 §3.2)', async () => {
    const form = new URLSearchParams([
      ['grant_type', 'client_credentials'],
      ['client_id', 'veil-dev'],
      ['client_secret', devSecret()],
      ['client_secret', devSecret()],
    ]);
    expectOAuthError(await tokenRequest(svc, form), 400, 'invalid_request');
    const twoIds = new URLSearchParams([
      ['grant_type', 'client_credentials'],
      ['client_id', 'veil-dev'],
      ['client_id', SUPPORT.id],
      ['client_secret', devSecret()],
    ]);
    expectOAuthError(await tokenRequest(svc, twoIds), 400, 'invalid_request');
  });

  it('invalid_request: a JSON body, a text body, or no body', async () => {
    const json = JSON.stringify({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: devSecret() });
    expectOAuthError(
      await call(`${svc.url}/connect/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: json }),
      400,
      'invalid_request',
    );
    expectOAuthError(
      await call(`${svc.url}/connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: devSecret() }).toString(),
      }),
      400,
      'invalid_request',
    );
    expectOAuthError(await call(`${svc.url}/connect/token`, { method: 'POST' }), 400, 'invalid_request');
  });

  it('invalid_request: two client authentication methods, or a form client_id that differs from Basic', async () => {
    expectOAuthError(
      await tokenRequest(svc, { grant_type: 'client_credentials', client_secret: devSecret() }, { authorization: basic('veil-dev', devSecret()) }),
      400,
      'invalid_request',
    );
    expectOAuthError(
      await tokenRequest(svc, { grant_type: 'client_credentials', client_id: SUPPORT.id }, { authorization: basic('veil-dev', devSecret()) }),
      400,
      'invalid_request',
    );
  });

  it('invalid_request, not a server error: Basic credentials with broken percent-encoding', async () => {
    const broken = `Basic ${Buffer.from('veil-dev:%E0%A4%A').toString('base64')}`;
    expectOAuthError(await tokenRequest(svc, { grant_type: 'client_credentials' }, { authorization: broken }), 400, 'invalid_request');
  });

  it('unsupported_grant_type: anything but client_credentials', async () => {
    for (const grant of ['password', 'authorization_code', 'urn:ietf:params:oauth:grant-type:jwt-bearer', 'CLIENT_CREDENTIALS']) {
      expectOAuthError(await tokenRequest(svc, { grant_type: grant, client_id: 'veil-dev', client_secret: devSecret() }), 400, 'unsupported_grant_type');
    }
  });
});

describe('POST /connect/token: failed client authentication', () => {
  let local: TestService;
  beforeAll(async () => {
    local = await startWith(
      `service:\n  rateLimit: { tokenFailuresPerMinute: 3 }\n${await clientsYaml({ [SUPPORT.id]: { secret: SUPPORT.secret, roles: ['support'] } })}`,
    );
    services.push(local);
  });

  it('invalid_client (401): a wrong secret and an unknown client get the same answer', async () => {
    const wrong = expectOAuthError(
      await tokenRequest(svc, { grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: 'zz-wrong-secret' }),
      401,
      'invalid_client',
    );
    const unknown = expectOAuthError(
      await tokenRequest(svc, { grant_type: 'client_credentials', client_id: 'nobody', client_secret: 'zz-wrong-secret' }),
      401,
      'invalid_client',
    );
    expect(unknown).toEqual(wrong);
  });

  it('invalid_client over HTTP Basic answers 401 with WWW-Authenticate: Basic', async () => {
    const reply = await tokenRequest(svc, { grant_type: 'client_credentials' }, { authorization: basic('veil-dev', 'zz-wrong-secret') });
    expectOAuthError(reply, 401, 'invalid_client');
    expect(reply.headers.get('www-authenticate')).toMatch(/^Basic realm="veil"/);
    const malformed = await tokenRequest(svc, { grant_type: 'client_credentials' }, { authorization: `Basic ${Buffer.from('no-colon').toString('base64')}` });
    expectOAuthError(malformed, 401, 'invalid_client');
    expect(malformed.headers.get('www-authenticate')).toMatch(/^Basic /);
  });

  it('after tokenFailuresPerMinute failures: 429 slow_down with Retry-After, even for the right secret; recovers as the clock advances', async () => {
    for (let i = 0; i < 3; i++) {
      expectOAuthError(
        await tokenRequest(local, { grant_type: 'client_credentials', client_id: SUPPORT.id, client_secret: 'zz-wrong-secret' }),
        401,
        'invalid_client',
      );
    }
    const slowed = await tokenRequest(local, { grant_type: 'client_credentials', client_id: SUPPORT.id, client_secret: 'zz-wrong-secret' });
    expectOAuthError(slowed, 429, 'slow_down');
    // 3 per minute: one more attempt every 20 s
    expect(slowed.headers.get('retry-after')).toBe('20');
    expectOAuthError(await tokenRequest(local, { grant_type: 'client_credentials', client_id: SUPPORT.id, client_secret: SUPPORT.secret }), 429, 'slow_down');
    local.clock.advance(10);
    expectOAuthError(await tokenRequest(local, { grant_type: 'client_credentials', client_id: SUPPORT.id, client_secret: SUPPORT.secret }), 429, 'slow_down');
    local.clock.advance(10);
    expectTokenResponse(await tokenRequest(local, { grant_type: 'client_credentials', client_id: SUPPORT.id, client_secret: SUPPORT.secret }));
    // successes cost nothing
    expectTokenResponse(await tokenRequest(local, { grant_type: 'client_credentials', client_id: SUPPORT.id, client_secret: SUPPORT.secret }));
    local.clock.advance(60);
    expectTokenResponse(await tokenRequest(local, { grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: devSecret(local) }));
  });
});

describe('discovery and JWKS', () => {
  it('serves the OpenID discovery document', async () => {
    const reply = await call(`${svc.url}/.well-known/openid-configuration`);
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({
      issuer: ISSUER,
      token_endpoint: `${ISSUER}/connect/token`,
      jwks_uri: `${ISSUER}/.well-known/jwks.json`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: expect.arrayContaining(['client_secret_post', 'client_secret_basic']),
    });
  });

  it('the JWKS holds public P-256 keys only, and verifies the tokens', async () => {
    const reply = await call(`${svc.url}/.well-known/jwks.json`);
    expect(reply.status).toBe(200);
    const jwks = reply.json as JSONWebKeySet;
    expect(jwks.keys).toHaveLength(1);
    const [key] = jwks.keys as Loose[];
    expect(key).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig', kid: 'veil-token-signing.v1' });
    expect(Object.keys(key).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    for (const priv of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']) expect(key[priv]).toBeUndefined();
    expect(Buffer.from(key.x, 'base64url')).toHaveLength(32);

    const token = await svc.token();
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks), {
      issuer: ISSUER,
      audience: 'veil',
      algorithms: ['ES256'],
      typ: 'at+jwt',
      currentDate: svc.clock.now,
    });
    expect(protectedHeader.kid).toBe(key.kid);
    expect(payload.sub).toBe('veil-dev');
  });

  it('rotating the signing key: new tokens carry the new kid, the JWKS lists both, old tokens keep working', async () => {
    const rotating = await startTestService();
    services.push(rotating);
    const oldToken = await rotating.token();
    expect(decodeProtectedHeader(oldToken).kid).toBe('veil-token-signing.v1');

    await rotating.service.keystore.rotate('veil-token-signing');
    const newToken = await rotating.token();
    expect(decodeProtectedHeader(newToken).kid).toBe('veil-token-signing.v2');

    const jwks = (await call(`${rotating.url}/.well-known/jwks.json`)).json as JSONWebKeySet;
    expect(jwks.keys.map((k) => k.kid)).toEqual(['veil-token-signing.v2', 'veil-token-signing.v1']);
    expect(jwks.keys[0]!.x).not.toBe(jwks.keys[1]!.x);
    for (const k of jwks.keys) expect((k as Loose).d).toBeUndefined();
    const set = createLocalJWKSet(jwks);
    for (const t of [oldToken, newToken]) await jwtVerify(t, set, { issuer: ISSUER, audience: 'veil', currentDate: rotating.clock.now });

    for (const t of [oldToken, newToken]) {
      const res = await transform(rotating, t, protectEmailBody());
      expect(res.status, res.text).toBe(200);
    }
    // the old token still expires on time
    rotating.clock.advance(900 + 31);
    expectProblem(await transform(rotating, oldToken, protectEmailBody()), 'TOKEN_EXPIRED');
  });

  it('no token response, error or discovery document holds a client secret or a value; the logs neither', async () => {
    const logs = services.flatMap((s) => s.logs);
    for (const secret of [devSecret(), SUPPORT.secret, ODD.secret, 'zz-wrong-secret', SECRET.email]) {
      expect(logs.find((l) => l.includes(secret))).toBeUndefined();
    }
  });
});
