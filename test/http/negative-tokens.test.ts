import { createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT, UnsecuredJWT, exportJWK, generateKeyPair, type JWK } from 'jose';
import type { TestService } from '../helpers/http-service.ts';
import { startTestService } from '../helpers/http-service.ts';
import { call, expectProblem, forge, protectEmailBody, transform, validClaims } from './support.ts';

/**
 * A corpus of bad bearer tokens after RFC 8725 (JWT BCP) §2–3 and RFC 9068 §4: each must get
 * 401 on /transform. Every forged token is signed with the service's own key unless the defect
 * is the signature itself, so the refusal is owed to the one defect under test; a positive
 * control shows the forging helper makes tokens the service accepts.
 */

let svc: TestService;
let jwks: { keys: JWK[] };
let kid: string;

beforeAll(async () => {
  svc = await startTestService();
  jwks = (await call(`${svc.url}/.well-known/jwks.json`)).json;
  kid = jwks.keys[0]!.kid!;
});

afterAll(async () => svc?.close());

async function expect401(authorization: string | undefined, code: 'TOKEN_INVALID' | 'TOKEN_EXPIRED' | 'TOKEN_MISSING' = 'TOKEN_INVALID'): Promise<void> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (authorization !== undefined) headers.authorization = authorization;
  const reply = await call(`${svc.url}/transform`, { method: 'POST', headers, body: JSON.stringify(protectEmailBody()) });
  expectProblem(reply, code);
  expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer realm="veil"/);
  expect(reply.json.responses).toBeUndefined();
}

function b64(json: object): string {
  return Buffer.from(JSON.stringify(json)).toString('base64url');
}

function hmacSecrets(): [string, Uint8Array][] {
  const jwk = jwks.keys[0]!;
  const pem = createPublicKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' }).export({ type: 'spki', format: 'pem' }) as string;
  const der = createPublicKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' }).export({ type: 'spki', format: 'der' });
  const x = Buffer.from(jwk.x!, 'base64url');
  const y = Buffer.from(jwk.y!, 'base64url');
  return [
    ['PEM', new TextEncoder().encode(pem)],
    ['SPKI DER', new Uint8Array(der)],
    ['x || y', new Uint8Array(Buffer.concat([x, y]))],
    ['0x04 || x || y', new Uint8Array(Buffer.concat([Buffer.of(4), x, y]))],
    ['JWK JSON', new TextEncoder().encode(JSON.stringify(jwk))],
  ];
}

describe('positive controls', () => {
  it('a token forged with the service key and valid claims is accepted (the helper works)', async () => {
    const res = await transform(svc, await forge(svc), protectEmailBody());
    expect(res.status, res.text).toBe(200);
  });

  it('nbf within the 30 s tolerance and exp just inside it are accepted', async () => {
    const now = Math.floor(svc.clock.now.getTime() / 1000);
    expect((await transform(svc, await forge(svc, { claims: { nbf: now + 20 } }), protectEmailBody())).status).toBe(200);
    expect((await transform(svc, await forge(svc, { claims: { iat: now - 920, nbf: now - 920, exp: now - 20 } }), protectEmailBody())).status).toBe(200);
  });

  it('a token without kid is not a defect: validly signed by the service key, it is accepted', async () => {
    const res = await transform(svc, await forge(svc, { header: { kid: undefined } }), protectEmailBody());
    expect(res.status, res.text).toBe(200);
  });

  it('the service-issued token is accepted', async () => {
    expect((await transform(svc, await svc.token(), protectEmailBody())).status).toBe(200);
  });
});

describe('RFC 8725 corpus: every token gets 401 on /transform', () => {
  it('alg none (unsecured JWT), with and without a signature part', async () => {
    const unsecured = new UnsecuredJWT(validClaims(svc)).encode();
    await expect401(`Bearer ${unsecured}`);
    // the same with the at+jwt typ and a kid, and with a bogus signature appended
    const header = b64({ alg: 'none', typ: 'at+jwt', kid });
    const payload = b64(validClaims(svc));
    await expect401(`Bearer ${header}.${payload}.`);
    await expect401(`Bearer ${header}.${payload}.${Buffer.from('sig').toString('base64url')}`);
    for (const alg of ['None', 'NONE', 'nOnE']) await expect401(`Bearer ${b64({ alg, typ: 'at+jwt', kid })}.${payload}.`);
  });

  it('HS256 / HS384 / HS512 signed with the service public key as the HMAC secret (key confusion)', async () => {
    for (const [, secret] of hmacSecrets()) {
      for (const alg of ['HS256', 'HS384', 'HS512']) {
        const token = await new SignJWT(validClaims(svc)).setProtectedHeader({ alg, typ: 'at+jwt', kid }).sign(secret);
        await expect401(`Bearer ${token}`);
      }
    }
  });

  it('ES256 signed by a foreign key that names the service kid', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const token = await new SignJWT(validClaims(svc)).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid }).sign(privateKey);
    await expect401(`Bearer ${token}`);
  });

  it('a foreign key embedded in the header (jwk) or referenced by URL (jku, x5u)', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const jwk = await exportJWK(publicKey);
    const claims = validClaims(svc);
    await expect401(`Bearer ${await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', jwk }).sign(privateKey)}`);
    await expect401(`Bearer ${await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid, jwk }).sign(privateKey)}`);
    await expect401(
      `Bearer ${await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'attacker', jku: 'http://127.0.0.1:1/jwks.json' }).sign(privateKey)}`,
    );
    await expect401(
      `Bearer ${await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'attacker', x5u: 'http://127.0.0.1:1/cert.pem' }).sign(privateKey)}`,
    );
  });

  it('an unknown kid (validly signed by the service key)', async () => {
    await expect401(`Bearer ${await forge(svc, { header: { kid: 'veil-token-signing.v99' } })}`);
    await expect401(`Bearer ${await forge(svc, { header: { kid: 'nope' } })}`);
  });

  it('a kid with path traversal or injection', async () => {
    for (const bad of [
      '../../../../etc/passwd',
      '..\\..\\keystore.json',
      '/dev/null',
      'veil-token-signing.v1/../../x',
      "' OR '1'='1",
      'veil-token-signing.v1\u0000',
    ]) {
      await expect401(`Bearer ${await forge(svc, { header: { kid: bad } })}`);
    }
  });

  it('wrong iss, and missing iss', async () => {
    await expect401(`Bearer ${await forge(svc, { claims: { iss: 'http://evil.test' } })}`);
    await expect401(`Bearer ${await forge(svc, { claims: { iss: 'http://veil.test/' } })}`);
    await expect401(`Bearer ${await forge(svc, { claims: { iss: undefined } })}`);
    await expect401(`Bearer ${await forge(svc, { claims: { iss: ['http://veil.test'] } })}`);
  });

  it('wrong aud, and missing aud', async () => {
    await expect401(`Bearer ${await forge(svc, { claims: { aud: 'another-service' } })}`);
    await expect401(`Bearer ${await forge(svc, { claims: { aud: ['another-service', 'veil2'] } })}`);
    await expect401(`Bearer ${await forge(svc, { claims: { aud: undefined } })}`);
  });

  it('missing sub, missing exp', async () => {
    await expect401(`Bearer ${await forge(svc, { claims: { sub: undefined } })}`);
    await expect401(`Bearer ${await forge(svc, { claims: { exp: undefined } })}`);
  });

  it('typ JWT (or none) instead of at+jwt (RFC 9068 §4, RFC 8725 §3.11)', async () => {
    await expect401(`Bearer ${await forge(svc, { header: { typ: 'JWT' } })}`);
    await expect401(`Bearer ${await forge(svc, { header: { typ: 'dpop+jwt' } })}`);
    await expect401(`Bearer ${await forge(svc, { header: { typ: undefined } })}`);
  });

  it('another asymmetric alg than ES256 in the header', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    await expect401(`Bearer ${await new SignJWT(validClaims(svc)).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid }).sign(privateKey)}`);
    // the service key's valid P-256/SHA-256 signature over a header that claims another alg
    for (const alg of ['ES384', 'ES512', 'PS256', 'EdDSA', 'ES256K']) await expect401(`Bearer ${await forge(svc, { header: { alg } })}`);
  });

  it('expired beyond the 30 s tolerance: TOKEN_EXPIRED', async () => {
    const now = Math.floor(svc.clock.now.getTime() / 1000);
    await expect401(`Bearer ${await forge(svc, { claims: { iat: now - 1000, nbf: now - 1000, exp: now - 31 } })}`, 'TOKEN_EXPIRED');
  });

  it('nbf in the future beyond the 30 s tolerance: refused', async () => {
    const now = Math.floor(svc.clock.now.getTime() / 1000);
    await expect401(`Bearer ${await forge(svc, { claims: { nbf: now + 31 } })}`, 'TOKEN_EXPIRED');
    await expect401(`Bearer ${await forge(svc, { claims: { nbf: now + 3600 } })}`, 'TOKEN_EXPIRED');
  });

  it('claims of the wrong type', async () => {
    await expect401(`Bearer ${await forge(svc, { claims: { exp: 'tomorrow' } })}`);
    await expect401(`Bearer ${await forge(svc, { claims: { roles: 'fraud' } })}`);
    await expect401(`Bearer ${await forge(svc, { claims: { roles: [{ name: 'fraud' }] } })}`);
  });

  it('an unknown crit header parameter', async () => {
    await expect401(`Bearer ${await forge(svc, { header: { crit: ['x-veil-unknown'], 'x-veil-unknown': true } })}`);
    // crit naming a parameter that is absent, and the unencoded payload extension
    await expect401(`Bearer ${await forge(svc, { header: { crit: ['exp'] } })}`);
  });

  it('an oversized token (> 8 KB), even when validly signed', async () => {
    const token = await forge(svc, { claims: { padding: 'p'.repeat(9000) } });
    expect(token.length).toBeGreaterThan(8192);
    await expect401(`Bearer ${token}`);
  });

  it('garbage in the Bearer credentials', async () => {
    for (const junk of [
      'garbage',
      'a.b.c',
      '....',
      'eyJ.eyJ.eyJ',
      `${b64({ alg: 'ES256' })}.!!!.sig`,
      `${b64({ alg: 'ES256', typ: 'at+jwt', kid })}.${b64({})}.AAAA`,
      'x'.repeat(100),
    ]) {
      await expect401(`Bearer ${junk}`);
    }
  });

  it('two tokens in one header, and two Authorization headers', async () => {
    const token = await svc.token();
    await expect401(`Bearer ${token} ${token}`);
    await expect401(`Bearer ${token}, Bearer ${token}`);
    const headers = new Headers({ 'content-type': 'application/json' });
    headers.append('authorization', `Bearer ${token}`);
    headers.append('authorization', `Bearer ${token}`);
    const reply = await call(`${svc.url}/transform`, { method: 'POST', headers, body: JSON.stringify(protectEmailBody()) });
    expect(reply.status).toBe(401);
  });

  it('Bearer without a token, and other schemes', async () => {
    await expect401('Bearer');
    await expect401('Bearer    ');
    await expect401(`Basic ${Buffer.from(`veil-dev:${svc.service.devClient!.secret}`).toString('base64')}`);
    await expect401(`Token ${await svc.token()}`);
    await expect401(`DPoP ${await svc.token()}`);
  });

  it('a token with a modified payload (roles added) and the original signature', async () => {
    const original = await svc.token(); // already all roles: give it fewer first
    const limited = await forge(svc, { claims: { roles: ['support'] } });
    expect((await transform(svc, limited, protectEmailBody())).status).toBe(403);
    const [header, payload, signature] = limited.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    claims.roles = ['support', 'fraud'];
    await expect401(`Bearer ${header}.${b64(claims)}.${signature}`);
    // the header changed instead (typ dropped) with the original signature
    const [, p2, s2] = original.split('.');
    await expect401(`Bearer ${b64({ alg: 'ES256', kid })}.${p2}.${s2}`);
    // signature of another valid token
    const other = await svc.token();
    await expect401(`Bearer ${header}.${payload}.${other.split('.')[2]}`);
  });

  it('a token issued for the future (iat far ahead, nbf now) is still bound by nbf and exp', async () => {
    // not a defect per se, but exp far in the past with a future iat must still be refused
    const now = Math.floor(svc.clock.now.getTime() / 1000);
    await expect401(`Bearer ${await forge(svc, { claims: { iat: now + 10_000, nbf: now - 100, exp: now - 60 } })}`, 'TOKEN_EXPIRED');
  });

  it('no refusal was a server error, and the service logged no token', () => {
    const logs = svc.logs.join('');
    expect(logs).not.toContain('unexpected error');
    expect(logs).not.toContain('"statusCode":500');
    expect(logs).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\.eyJ/);
  });
});
