// Tokens and forwarded headers through `veil gateway` (real processes): the caller's veil token never
// reaches the application unless a route says so, on every kind of route; the caller cannot tell
// the application who it is, how it came or where it meant to go, unless it is a trusted proxy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../../helpers/raw-http.ts';
import { headerNames, headerOf, securityFixture, type Recorded, type SecurityFixture } from '../../helpers/gateway-security.ts';
import { customers, EMAIL, gatewaySection, route, SEC, STATIC } from '../../helpers/gateway-routes.ts';

const ROUTES = gatewaySection(
  [customers(EMAIL), STATIC, SEC, route('with-auth', 'GET', '/auth/*', { settings: ['forwardAuthorization: true'] })],
  'unmatched: forward',
);

/** what a caller sends to pass itself off as someone else, or to be routed elsewhere upstream */
const SPOOF = [
  'X-Forwarded-For',
  '6.6.6.6',
  'X-Forwarded-Host',
  'evil.example',
  'X-Forwarded-Proto',
  'https',
  'X-Forwarded-Port',
  '443',
  'X-Forwarded-Prefix',
  '/admin',
  'Forwarded',
  'for=6.6.6.6;host=evil.example;proto=https',
  'X-Real-IP',
  '6.6.6.6',
  'X-Original-URL',
  '/customers',
  'X-Rewrite-URL',
  '/customers',
  'X-HTTP-Method-Override',
  'DELETE',
  'X-Method-Override',
  'DELETE',
  'X-HTTP-Method',
  'DELETE',
];

describe('veil gateway: tokens and forwarded headers', () => {
  let f: SecurityFixture;
  let host: string;

  beforeAll(async () => {
    f = await securityFixture(ROUTES);
    host = new URL(f.url).host;
  }, 60_000);
  afterAll(async () => f?.close());

  const through = async (url: string, method: string, path: string, headers: string[], body?: string): Promise<Recorded> => {
    const since = (await f.lastSeq()) + 1;
    await call(url, method, path, { headers, ...(body === undefined ? {} : { body }) });
    const parsed = await f.received(since);
    expect(parsed).toHaveLength(1);
    return parsed[0]!;
  };

  it('never forwards Authorization, on routes with and without selectors and unmatched ones, unless the route says so', async () => {
    const bearer = ['Authorization', `Bearer ${f.tokens.fraud}`];
    const seen = [
      await through(f.url, 'GET', '/static/x', bearer),
      await through(f.url, 'POST', '/sec/x', [...bearer, 'Content-Type', 'text/plain'], 'hello'),
      await through(f.url, 'GET', '/unmatched/x', bearer),
      await through(f.url, 'POST', '/customers', [...bearer, 'Content-Type', 'application/json'], '{"email":"a@example.com"}'),
    ];
    for (const r of seen) {
      expect(headerNames(r)).not.toContain('authorization');
      expect(JSON.stringify(r)).not.toContain(f.tokens.fraud);
    }
    expect(headerOf(await through(f.url, 'GET', '/auth/x', bearer), 'authorization')).toBe(`Bearer ${f.tokens.fraud}`);
  });

  it("replaces the caller's X-Forwarded-*, Forwarded and X-Real-IP with its own, and drops rerouting headers", async () => {
    for (const path of ['/static/x', '/unmatched/x']) {
      const r = await through(f.url, 'GET', path, [
        ...SPOOF,
        'Connection',
        'X-Hop',
        'X-Hop',
        '1',
        'Keep-Alive',
        'timeout=9',
        'TE',
        'trailers',
        'Upgrade',
        'h2c',
        'Proxy-Authorization',
        'Basic eA==',
        'Cookie',
        'c=1',
      ]);
      expect(headerOf(r, 'x-forwarded-for')).toBe('127.0.0.1');
      expect(headerOf(r, 'x-forwarded-host')).toBe(host);
      expect(headerOf(r, 'x-forwarded-proto')).toBe('http');
      expect(headerOf(r, 'forwarded')).toBe(`for="127.0.0.1";host="${host}";proto=http`);
      const names = headerNames(r);
      for (const gone of [
        'x-forwarded-port',
        'x-forwarded-prefix',
        'x-real-ip',
        'x-original-url',
        'x-rewrite-url',
        'x-http-method-override',
        'x-method-override',
        'x-http-method',
        'x-hop',
        'keep-alive',
        'te',
        'upgrade',
        'proxy-authorization',
      ]) {
        expect(names, gone).not.toContain(gone);
      }
      expect(names.filter((n) => n.startsWith('x-forwarded-') || n === 'forwarded')).toHaveLength(4);
      expect(headerOf(r, 'cookie')).toBe('c=1');
      expect(r.method).toBe('GET');
      expect(r.target).toBe(path);
    }
  });

  it('keeps and extends them when the peer is a configured trusted proxy', async () => {
    const trusted = await f.another(`  trustedProxies: ['127.0.0.0/8', '::1']\n${ROUTES}`);
    try {
      const r = await through(trusted.url, 'GET', '/static/x', SPOOF);
      expect(headerOf(r, 'x-forwarded-for')).toBe('6.6.6.6, 127.0.0.1');
      expect(headerOf(r, 'x-forwarded-host')).toBe('evil.example');
      expect(headerOf(r, 'x-forwarded-proto')).toBe('https');
      expect(headerOf(r, 'forwarded')).toBe(`for=6.6.6.6;host=evil.example;proto=https, for="127.0.0.1";host="127.0.0.1:${trusted.port}";proto=http`);
      expect(headerOf(r, 'x-real-ip')).toBe('6.6.6.6');
      // rerouting headers are dropped from every peer
      expect(headerNames(r)).not.toContain('x-original-url');
      expect(headerNames(r)).not.toContain('x-http-method-override');
    } finally {
      trusted.stop();
    }
  });
});
