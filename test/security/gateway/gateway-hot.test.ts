// Stale rights, slow bodies and TLS, against a real `veil gateway` process: a grant revoked and a key
// rotated elsewhere (another process publishing into the data dir, as the portal does) are seen
// without a restart; a streamed body that does not arrive in time is cut; the gateway serves HTTPS.
import { execFileSync } from 'node:child_process';
import https from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngine } from '../../../src/app/open-engine.ts';
import { ConfigVersions } from '../../../src/control/index.ts';
import { waitFor } from '../../helpers/processes.ts';
import { call } from '../../helpers/raw-http.ts';
import {
  bodyOf,
  configText,
  headerOf,
  MASTER_KEY,
  rawSend,
  securityFixture,
  startGatewayProcess,
  type SecurityFixture,
} from '../../helpers/gateway-security.ts';
import { writeFile } from 'node:fs/promises';
import { CARD, customers, EMAIL, gatewaySection, route, SEC } from '../../helpers/gateway-routes.ts';
import { selfSignedServerCert } from '../../helpers/tls-certs.ts';

const ROUTES = gatewaySection([customers(EMAIL, CARD), route('reveal', 'POST', '/reveal', { response: [EMAIL] }), SEC], 'limits: { streamTimeoutMs: 700 }');

describe('veil gateway: hot configuration and keys, stream deadline, TLS', () => {
  let f: SecurityFixture;
  const json = (who: string) => ['Authorization', `Bearer ${f.tokens[who]}`, 'Content-Type', 'application/json'];

  beforeAll(async () => {
    f = await securityFixture(ROUTES);
  }, 60_000);
  afterAll(async () => f?.close());

  it('sees a grant revoked in a version published elsewhere, without a restart', async () => {
    const body = JSON.stringify({ email: 'a@example.com', card: { number: '4111-1111-1111-1111' } });
    expect((await call(f.url, 'POST', '/customers', { headers: json('ingest'), body })).status).toBe(200);
    // another process publishes a version where ingest may protect names only
    const text = (await configText(f.upstreamUrl, ROUTES)).replace(
      "- { actions: [Protect, Pseudonymize], fields: ['Customer.*'] }",
      '- { actions: [Protect], fields: [Customer.name] }',
    );
    const versions = await ConfigVersions.open(f.dataDir);
    await versions.publish(text, { by: 'test', source: 'portal', note: 'revoke ingest', now: new Date() });
    await waitFor(async () => (await call(f.url, 'POST', '/customers', { headers: json('ingest'), body })).status === 403, 10_000, 'the revoked grant');
    const since = (await f.lastSeq()) + 1;
    const refused = await call(f.url, 'POST', '/customers', { headers: json('ingest'), body });
    expect(JSON.parse(refused.body.toString())).toMatchObject({ status: 403, code: 'ACTION_NOT_GRANTED', pointer: '/email' });
    expect(await f.received(since)).toHaveLength(0);
    expect(f.output()).toContain('now running the active version');
  });

  it('reveals values protected under a key version rotated elsewhere, without a restart', async () => {
    const { engine, keystore } = await openEngine({
      configFile: join(f.dataDir, 'gateway.yaml'),
      dataDir: f.dataDir,
      env: { VEIL_MASTER_KEY: MASTER_KEY },
      now: () => new Date(),
      provision: false,
    });
    const protect = (e: typeof engine) =>
      e.transform(
        {
          rightsContexts: [{ guid: '10000000-0000-4000-8000-000000000001', evidences: [{ name: 'Role', value: 'fraud' }] }],
          processingContexts: [{ guid: '10000000-0000-4000-8000-000000000002', evidences: [{ name: 'Action', value: 'Protect' }] }],
          requests: [
            {
              guid: '10000000-0000-4000-8000-000000000003',
              rightsContext: '10000000-0000-4000-8000-000000000001',
              processingContext: '10000000-0000-4000-8000-000000000002',
              instances: [{ className: 'Customer', propertyName: 'email', value: 'rotated@example.com' }],
            },
          ],
        },
        { roles: ['fraud'] },
      ).responses[0]!.instances[0]!.value;
    const underOldVersion = protect(engine);
    await keystore.rotate('customer-siv');
    const underNewVersion = protect(engine);
    expect(underNewVersion).not.toBe(underOldVersion);
    let shown = '';
    await waitFor(
      async () => {
        const reply = await call(f.url, 'POST', '/reveal', { headers: json('fraud'), body: JSON.stringify({ email: underNewVersion }) });
        shown = JSON.parse(reply.body.toString()).email;
        return shown === 'rotated@example.com';
      },
      10_000,
      'the rotated key',
    );
    expect(shown).toBe('rotated@example.com');
  });

  it('cuts a streamed body that does not arrive within streamTimeoutMs: 408, connection closed, nothing complete upstream', async () => {
    const since = (await f.lastSeq()) + 1;
    const started = Date.now();
    const reply = await rawSend(f.port, [`POST /sec/slow HTTP/1.1\r\nHost: 127.0.0.1:${f.port}\r\nContent-Length: 100\r\n\r\n0123456789`], { idleMs: 3000 });
    expect(reply.statuses).toEqual([408]);
    expect(reply.codes).toEqual(['REQUEST_TIMEOUT']);
    expect(reply.closed).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(650);
    expect(await f.received(since)).toHaveLength(0);
    // a chunked one too
    const chunked = await rawSend(f.port, [`POST /sec/slow HTTP/1.1\r\nHost: 127.0.0.1:${f.port}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n`], {
      idleMs: 3000,
    });
    expect(chunked.codes).toEqual(['REQUEST_TIMEOUT']);
    expect(await f.received(since)).toHaveLength(0);
  });

  it('serves HTTPS with gateway.tls and tells the upstream proto=https', async () => {
    const cert = join(f.dataDir, 'gw-cert.pem');
    const key = join(f.dataDir, 'gw-key.pem');
    await selfSignedServerCert({ cert, key }, 'IP:127.0.0.1');
    const file = join(f.dataDir, 'gateway-tls.yaml');
    await writeFile(file, await configText(f.upstreamUrl, `  tls: { certFile: ${cert}, keyFile: ${key} }\n${ROUTES}`));
    const g = await startGatewayProcess(file, f.dataDir, { GATEWAY_SCHEME: 'https' });
    const ca = execFileSync('cat', [cert]);
    const get = (path: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        https
          .get(`${g.url}${path}`, { ca }, (res) => {
            let body = '';
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode!, body }));
          })
          .on('error', reject);
      });
    try {
      await waitFor(async () => (await get('/_veil/healthz').catch(() => ({ status: 0 }))).status === 200, 30_000, 'the TLS gateway');
      const since = (await f.lastSeq()) + 1;
      expect((await get('/sec/tls')).status).toBe(200);
      const [r] = await f.received(since);
      expect(headerOf(r!, 'x-forwarded-proto')).toBe('https');
      expect(headerOf(r!, 'forwarded')).toMatch(/;proto=https$/);
      expect(bodyOf(r!)).toBe('');
      // plain HTTP on the TLS port is not served
      expect((await rawSend(g.port, `GET /sec/x HTTP/1.1\r\nHost: x\r\n\r\n`, { idleMs: 500 })).statuses).not.toContain(200);
    } finally {
      g.child.kill('SIGKILL');
    }
  });
});
