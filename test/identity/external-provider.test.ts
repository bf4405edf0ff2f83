import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { startTestService, type TestService } from '../helpers/http-service.ts';
import { EXAMPLE_CONFIG } from '../../src/env/index.ts';

const example = readFileSync(EXAMPLE_CONFIG, 'utf8');
const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const body = (role: string) => ({
  rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: role }] }],
  processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: 'Protect' }] }],
  requests: [
    {
      guid: guid(3),
      rightsContext: guid(1),
      processingContext: guid(2),
      instances: [{ className: 'Customer', propertyName: 'email', value: 'ext@example.com' }],
    },
  ],
});
const transform = (url: string, token: string, role: string) =>
  fetch(`${url}/transform`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body(role)),
  });

describe('external identity provider: a second veil instance over real HTTP', () => {
  let provider: TestService;
  let relying: TestService;

  beforeAll(async () => {
    provider = await startTestService({ issuer: 'http://provider.test' });
    relying = await startTestService({
      issuer: 'http://relying.test',
      configText: `${example}\nidentity:\n  external:\n    - issuer: http://provider.test\n      audience: veil\n      jwksUrl: ${provider.url}/.well-known/jwks.json\n      rolesClaim: roles\n      algorithms: [ES256]\n`,
    });
  });
  afterAll(async () => {
    await relying?.close();
    await provider?.close();
  });

  it('accepts a token issued by the provider, verified with its JWKS fetched over HTTP', async () => {
    const res = await transform(relying.url, await provider.token(), 'support');
    expect(res.status).toBe(200);
    const out = (await res.json()) as { responses: { instances: { value: string }[] }[] };
    expect(out.responses[0]!.instances[0]!.value).not.toBe('ext@example.com');
  });

  it('refuses the provider token after its expiry on the relying clock', async () => {
    const token = await provider.token();
    relying.clock.advance(3600);
    const res = await transform(relying.url, token, 'support');
    relying.clock.advance(-3600);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code: string }).code).toBe('TOKEN_EXPIRED');
  });

  it('still accepts its own tokens beside the provider tokens', async () => {
    expect((await transform(relying.url, await relying.token(), 'fraud')).status).toBe(200);
  });
});

describe('external identity provider: Keycloak-style nested roles claim', () => {
  let jwksServer: Server;
  let jwksUrl: string;
  let service: TestService;
  let sign: (claims: Record<string, unknown>) => Promise<string>;

  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'kc-1', alg: 'RS256', use: 'sig' };
    jwksServer = createServer((req, res) => {
      res.writeHead(req.url === '/certs' ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', r));
    jwksUrl = `http://127.0.0.1:${(jwksServer.address() as { port: number }).port}/certs`;
    sign = (claims) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'kc-1', typ: 'JWT' }).setIssuedAt().setExpirationTime('5m').sign(privateKey);
    service = await startTestService({
      configText: `${example}\nidentity:\n  external:\n    - issuer: http://keycloak.test/realms/acme\n      audience: veil-api\n      jwksUrl: ${jwksUrl}\n      rolesClaim: realm_access.roles\n`,
    });
  });
  afterAll(async () => {
    await service?.close();
    await new Promise((r) => jwksServer?.close(r));
  });

  const claims = (extra: Record<string, unknown> = {}) => ({
    iss: 'http://keycloak.test/realms/acme',
    aud: 'veil-api',
    sub: 'agent-7',
    realm_access: { roles: ['support'] },
    ...extra,
  });

  it('takes roles from realm_access.roles', async () => {
    expect((await transform(service.url, await sign(claims()), 'support')).status).toBe(200);
    const denied = await transform(service.url, await sign(claims()), 'fraud');
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { code: string }).code).toBe('ROLE_NOT_HELD');
  });

  it('refuses a wrong audience, and roles that are not a list of strings', async () => {
    expect((await transform(service.url, await sign(claims({ aud: 'other' })), 'support')).status).toBe(401);
    expect((await transform(service.url, await sign(claims({ realm_access: { roles: 'support' } })), 'support')).status).toBe(401);
  });

  it('a token without the roles claim holds no role', async () => {
    const res = await transform(service.url, await sign(claims({ realm_access: {} })), 'support');
    expect(res.status).toBe(403);
  });
});
