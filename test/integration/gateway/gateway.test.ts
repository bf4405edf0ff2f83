import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngine } from '../../../src/app/open-engine.ts';
import { JwtSigner } from '../../../src/keystore/jwt-signer.ts';
import { freePorts, ROOT, waitFor } from '../../helpers/processes.ts';
import { samples } from '../../helpers/prometheus.ts';
import { call, type Reply } from '../../helpers/raw-http.ts';
import { spawnGatewayUpstream } from '../../helpers/gateway-upstream-process.ts';
import { CARD, customers, EMAIL, gatewaySection, NAME, route, STATIC } from '../../helpers/gateway-routes.ts';

const MASTER_KEY = 'c'.repeat(64);
const ISSUER = 'http://veil.test';
const BODY_LIMIT = 8192;
const CONTACT_EMAILS = `{ select: 'contacts[*]."e-mail"', field: Customer.email }`;

/** The example configuration's engine sections, and a gateway in front of the test upstream. */
function configText(upstreamPort: number): Promise<string> {
  return readFile(join(ROOT, 'config/example.yaml'), 'utf8').then(
    (engine) => `${engine}
gateway:
  upstream: http://127.0.0.1:${upstreamPort}
${gatewaySection(
  [
    customers(EMAIL, CARD, NAME, CONTACT_EMAILS),
    route('reveal', 'POST', '/reveal', { response: [EMAIL, '{ select: card.number, field: Customer.cardNumber, ifDenied: Mask }', NAME, CONTACT_EMAILS] }),
    route('upload', 'POST', '/upload'),
    STATIC,
    route('slow', 'GET', '/slow'),
  ],
  `limits: { bodyBytes: ${BODY_LIMIT} }`,
)}`,
  );
}

const json = (reply: Reply) => JSON.parse(reply.body.toString('utf8'));
const names = (raw: string[]) => raw.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());

interface Received {
  method: string;
  target: string;
  rawHeaders: string[];
  body: string;
}

describe('veil gateway against a real upstream process', () => {
  let dataDir: string;
  let upstream: ChildProcess;
  let upstreamUrl: string;
  let gateway: ChildProcess;
  let url: string;
  let gatewayOutput = '';
  let signer: JwtSigner;
  const tokens: Record<string, string> = {};

  const received = async (): Promise<Received[]> => (await fetch(`${upstreamUrl}/__control/received`)).json() as Promise<Received[]>;
  const bearer = (who: string) => ['Authorization', `Bearer ${tokens[who]}`];

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-gateway-'));
    ({ child: upstream, url: upstreamUrl } = await spawnGatewayUpstream());

    const configFile = join(dataDir, 'gateway.yaml');
    await writeFile(configFile, await configText(Number(new URL(upstreamUrl).port)));
    // keys and the token signing key exist before the gateway starts, as after `veil serve`
    const { keystore } = await openEngine({ configFile, dataDir, env: { VEIL_MASTER_KEY: MASTER_KEY }, now: () => new Date(), provision: true });
    await keystore.create('veil-token-signing', 'jwt-es256');
    signer = new JwtSigner(keystore, 'veil-token-signing');
    const iat = Math.floor(Date.now() / 1000);
    for (const [who, roles] of Object.entries({ ingest: ['ingest'], support: ['support'], fraud: ['fraud'], nobody: [] as string[] })) {
      tokens[who] = await signer.sign({ iss: ISSUER, sub: who, aud: 'veil', iat, nbf: iat, exp: iat + 600, client_id: who, roles }, 'at+jwt');
    }

    const port = await freePorts(1);
    url = `http://127.0.0.1:${port}`;
    gateway = spawn(join(ROOT, 'bin/veil'), ['gateway', '--config', configFile, '--data-dir', dataDir, '--port', String(port)], {
      env: { ...process.env, VEIL_MASTER_KEY: MASTER_KEY, VEIL_BASE_URL: ISSUER, VEIL_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    gateway.stdout!.on('data', (d) => (gatewayOutput += String(d)));
    gateway.stderr!.on('data', (d) => (gatewayOutput += String(d)));
    await waitFor(async () => (await fetch(`${url}/_veil/healthz`).catch(() => undefined))?.status === 200, 30_000, 'the gateway');
  }, 60_000);

  afterAll(async () => {
    for (const child of [gateway, upstream]) if (child && child.exitCode === null) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  const customer = {
    name: 'Alice Martin',
    email: 'alice@example.com',
    card: { number: '4111-1111-1111-1111', expires: '12/29' },
    contacts: [{ 'e-mail': 'bob@example.com' }, { phone: '+33 1' }],
  };
  // bytes the gateway must not touch: big and decimal numbers, spacing, key order, an escape
  const customerText = `{"big": 12345678901234567890, "ratio": 1.0, ${JSON.stringify(customer).slice(1, -1)}, "note": "caf\\u00e9"}`;
  const cleartexts = ['Alice Martin', 'alice@example.com', '4111-1111-1111-1111', 'bob@example.com'];
  let protectedText = '';

  it('protects the selected request fields before the upstream sees them, and nothing else', async () => {
    const before = (await received()).length;
    const reply = await call(url, 'POST', '/customers', { headers: [...bearer('ingest'), 'Content-Type', 'application/json'], body: customerText });
    expect(reply.status).toBe(200);
    const got = (await received()).slice(before);
    expect(got).toHaveLength(1);
    protectedText = Buffer.from(got[0]!.body, 'base64').toString('utf8');
    for (const clear of cleartexts) expect(protectedText).not.toContain(clear);
    const doc = JSON.parse(protectedText);
    expect(doc.card.number).toMatch(/^4111-11\d\d-\d{4}-1111$/);
    expect(doc.card.expires).toBe('12/29');
    expect(doc.contacts[1]).toEqual({ phone: '+33 1' });
    expect(protectedText.startsWith('{"big": 12345678901234567890, "ratio": 1.0, "name":"')).toBe(true);
    expect(protectedText.endsWith(', "note": "caf\\u00e9"}')).toBe(true);
    // the upstream got a correct length, the caller's veil token was not passed on
    const headers = names(got[0]!.rawHeaders);
    expect(got[0]!.rawHeaders[got[0]!.rawHeaders.findIndex((h) => h.toLowerCase() === 'content-length') + 1]).toBe(String(Buffer.byteLength(protectedText)));
    expect(headers).not.toContain('authorization');
    // this route reveals nothing: the caller gets the upstream's echo as it was sent
    expect(reply.body.toString('utf8')).toBe(protectedText);
  });

  it("reveals response fields by the caller's roles: clear, masked, or left protected", async () => {
    const reveal = (who: string) => call(url, 'POST', '/reveal', { headers: [...bearer(who), 'Content-Type', 'application/json'], body: protectedText });
    const stored = JSON.parse(protectedText);

    const fraud = await reveal('fraud');
    expect(fraud.status).toBe(200);
    expect(json(fraud)).toEqual({ big: 12345678901234567890, ratio: 1.0, ...customer, note: 'café' });
    expect(fraud.body.toString('utf8')).toContain('"big": 12345678901234567890, "ratio": 1.0');

    const support = json(await reveal('support'));
    expect(support.email).toBe('alice@example.com');
    expect(support.contacts[0]['e-mail']).toBe('bob@example.com');
    expect(support.card.number).toBe('****-****-****-1111');
    expect(support.name).toBe(stored.name);

    const nobody = await reveal('nobody');
    expect(nobody.status).toBe(200);
    expect(nobody.body.toString('utf8')).toBe(protectedText);
  });

  it('audits every reveal in the data directory, without values', async () => {
    await waitFor(async () => (await readFile(join(dataDir, 'audit.log'), 'utf8').catch(() => '')).includes('"channel":"gateway"'), 5000, 'the audit record');
    const log = await readFile(join(dataDir, 'audit.log'), 'utf8');
    const events = log
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(
      events.some(
        (e) => e.channel === 'gateway' && e.outcome === 'ok' && e.client === 'fraud' && e.fields.some((f: { action: string }) => f.action === 'Unprotect'),
      ),
    ).toBe(true);
    for (const clear of cleartexts) expect(log).not.toContain(clear);
    for (const clear of cleartexts) expect(gatewayOutput).not.toContain(clear);
  });

  it('fails closed: a body it cannot protect is refused with problem+json and never forwarded', async () => {
    const before = (await received()).length;
    const post = (headers: string[], body: string | Buffer) => call(url, 'POST', '/customers', { headers, body });
    const jsonHeaders = (who: string) => [...bearer(who), 'Content-Type', 'application/json'];

    // support may protect emails but not cards
    const forbidden = await post(jsonHeaders('support'), customerText);
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers['content-type']).toBe('application/problem+json');
    expect(json(forbidden)).toMatchObject({ code: 'ACTION_NOT_GRANTED', pointer: '/name' });
    expect(json(forbidden).errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/name', '/card/number']);
    // a value the card sequence cannot take
    const bad = await post(jsonHeaders('ingest'), JSON.stringify({ email: 'x@example.com', card: { number: '4111-ABCD-11' } }));
    expect(bad.status).toBe(422);
    expect(json(bad)).toMatchObject({ code: 'VALUE_TOO_SHORT', pointer: '/card/number' });
    expect(bad.body.toString()).not.toContain('ABCD');
    // the messages describe the caller's request, never the gateway's own transform call
    expect(json(forbidden).detail).toBe(
      `2 problems in the call; the first: Protect on Customer.name (at /name) is not granted to the roles in the caller's token`,
    );
    expect(json(forbidden).errors.map((e: { message: string }) => e.message)).toEqual([
      "Protect on Customer.name (at /name) is not granted to the roles in the caller's token",
      "Protect on Customer.cardNumber (at /card/number) is not granted to the roles in the caller's token",
    ]);
    expect(json(bad).detail).toMatch(/^Customer\.cardNumber value needs at least .* \(at \/card\/number\)$/);
    const noRights = await post(jsonHeaders('nobody'), customerText);
    expect(noRights.status).toBe(403);
    expect(json(noRights)).toMatchObject({
      code: 'RIGHTS_CONTEXT_UNMATCHED',
      pointer: '',
      detail: "the roles in the caller's token match no configured rights context, so nothing can be protected",
    });
    for (const refusal of [forbidden, bad, noRights])
      expect(refusal.body.toString()).not.toMatch(/rightsContexts|processingContexts|\/requests\/|00000000-0000-4000/);
    // no token, a bad token
    expect(json(await post(['Content-Type', 'application/json'], customerText))).toMatchObject({ status: 401, code: 'TOKEN_MISSING' });
    expect(json(await post(['Authorization', 'Bearer abc.def.ghi', 'Content-Type', 'application/json'], customerText))).toMatchObject({
      status: 401,
      code: 'TOKEN_INVALID',
    });
    // a selected field that is an object
    expect(json(await post(jsonHeaders('ingest'), '{"email":{"local":"alice"}}'))).toMatchObject({ status: 422, code: 'FIELD_SHAPE_MISMATCH' });

    expect((await received()).length).toBe(before);
  });

  it('refuses bodies that are not JSON or over the limit on a route with selectors', async () => {
    const before = (await received()).length;
    const post = (headers: string[], body: string | Buffer, chunked = false) =>
      call(url, 'POST', '/customers', { headers: [...bearer('ingest'), ...headers], body, chunked });
    expect(json(await post(['Content-Type', 'application/json'], '{"email": "alice@example.com"'))).toMatchObject({ status: 400, code: 'BODY_NOT_JSON' });
    expect(json(await post(['Content-Type', 'application/json'], Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])))).toMatchObject({
      status: 400,
      code: 'BODY_NOT_JSON',
    });
    expect(json(await post(['Content-Type', 'text/plain'], 'email=alice@example.com'))).toMatchObject({ status: 415, code: 'CONTENT_TYPE_UNSUPPORTED' });
    expect(json(await post(['Content-Type', 'application/json', 'Content-Encoding', 'zstd'], 'x'))).toMatchObject({
      status: 415,
      code: 'CONTENT_ENCODING_UNSUPPORTED',
    });
    const big = JSON.stringify({ email: 'alice@example.com', pad: 'x'.repeat(BODY_LIMIT) });
    expect(json(await post(['Content-Type', 'application/json'], big))).toMatchObject({ status: 413, code: 'BODY_TOO_LARGE' });
    expect(json(await post(['Content-Type', 'application/json'], big, true))).toMatchObject({ status: 413, code: 'BODY_TOO_LARGE' });
    // small on the wire, over the limit once decoded
    const bomb = zlib.gzipSync(Buffer.from(big));
    expect(bomb.length).toBeLessThan(BODY_LIMIT);
    expect(json(await post(['Content-Type', 'application/json', 'Content-Encoding', 'gzip'], bomb))).toMatchObject({ status: 413, code: 'BODY_TOO_LARGE' });
    expect(json(await post(['Content-Type', 'application/json', 'Content-Encoding', 'gzip'], 'not gzip'))).toMatchObject({
      status: 400,
      code: 'BODY_NOT_JSON',
    });
    expect((await received()).length).toBe(before);
  });

  it('streams routes without selectors through byte for byte, without a token', async () => {
    const blob = await call(url, 'GET', '/static/blob');
    const direct = await call(upstreamUrl, 'GET', '/static/blob');
    expect(blob.status).toBe(200);
    expect(blob.body.equals(direct.body)).toBe(true);
    expect(blob.headers['content-length']).toBe(String(direct.body.length));
    expect(blob.headers.etag).toBe('"blob"');

    // not JSON although it says so: a route without selectors never looks
    const payload = Buffer.concat([Buffer.from('{"email": "alice@example.com", '), direct.body]);
    const echoed = await call(url, 'POST', '/upload', { headers: ['Content-Type', 'application/json'], body: payload, chunked: true });
    expect(echoed.status).toBe(200);
    expect(echoed.body.equals(payload)).toBe(true);
    const last = (await received()).at(-1)!;
    expect(Buffer.from(last.body, 'base64').equals(payload)).toBe(true);
  });

  it('handles gzip and br: decodes, protects and re-encodes the request; reveals and re-encodes the response', async () => {
    const before = (await received()).length;
    const gz = zlib.gzipSync(Buffer.from(customerText));
    const reply = await call(url, 'POST', '/customers', {
      headers: [...bearer('ingest'), 'Content-Type', 'application/json', 'Content-Encoding', 'gzip'],
      body: gz,
    });
    expect(reply.status).toBe(200);
    const got = (await received()).slice(before)[0]!;
    const raw = Buffer.from(got.body, 'base64');
    const get = (h: string) => got.rawHeaders[got.rawHeaders.findIndex((n) => n.toLowerCase() === h) + 1];
    expect(get('content-encoding')).toBe('gzip');
    expect(get('content-length')).toBe(String(raw.length));
    const upstreamSaw = zlib.gunzipSync(raw).toString('utf8');
    for (const clear of cleartexts) expect(upstreamSaw).not.toContain(clear);
    expect(JSON.parse(upstreamSaw).card.expires).toBe('12/29');

    for (const coding of ['br', 'gzip', 'deflate'] as const) {
      const revealed = await call(url, 'POST', '/reveal', {
        headers: [...bearer('fraud'), 'Content-Type', 'application/json', 'X-Respond-Encoding', coding, 'Accept-Encoding', 'zstd, br, gzip;q=0.5, deflate'],
        body: upstreamSaw,
      });
      expect(revealed.status).toBe(200);
      expect(revealed.headers['content-encoding']).toBe(coding);
      expect(revealed.headers['content-length']).toBe(String(revealed.body.length));
      expect(revealed.headers['transfer-encoding']).toBeUndefined();
      const decoded =
        coding === 'br' ? zlib.brotliDecompressSync(revealed.body) : coding === 'gzip' ? zlib.gunzipSync(revealed.body) : zlib.inflateSync(revealed.body);
      expect(JSON.parse(decoded.toString('utf8'))).toMatchObject(customer);
      // the upstream was offered only codings the gateway can rewrite
      const asked = (await received()).at(-1)!;
      expect(asked.rawHeaders[asked.rawHeaders.findIndex((n) => n.toLowerCase() === 'accept-encoding') + 1]).toBe('br, gzip;q=0.5, deflate');
    }
  });

  it("drops hop-by-hop headers both ways and passes the upstream's status and other headers", async () => {
    const reply = await call(url, 'POST', '/reveal', {
      headers: [
        ...bearer('support'),
        'Content-Type',
        'application/json',
        'X-Respond-Status',
        '418',
        'Connection',
        'keep-alive, X-Drop-Me',
        'X-Drop-Me',
        'secret',
        'Keep-Alive',
        'timeout=42',
        'Proxy-Authorization',
        'Basic Zm9vOmJhcg==',
        'TE',
        'trailers',
        'Upgrade',
        'h2c',
        'Trailer',
        'X-Sum',
        'X-Keep-Me',
        'yes',
      ],
      body: protectedText,
      chunked: true,
    });
    const forwarded = (await received()).at(-1)!;
    const sent = names(forwarded.rawHeaders);
    for (const h of ['x-drop-me', 'keep-alive', 'proxy-authorization', 'te', 'upgrade', 'trailer']) expect(sent).not.toContain(h);
    expect(sent).toContain('x-keep-me');
    expect(forwarded.rawHeaders[forwarded.rawHeaders.findIndex((n) => n.toLowerCase() === 'connection') + 1] ?? 'keep-alive').not.toMatch(/x-drop-me/i);

    expect(reply.status).toBe(418);
    expect(reply.statusMessage).toBe('Short And Stout');
    expect(reply.headers['x-upstream']).toBe('echo');
    expect(reply.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    // the body was rewritten: a weak validator, no digest of the upstream's bytes
    expect(reply.headers.etag).toBe('W/"v1"');
    expect(reply.headers['content-md5']).toBeUndefined();
    const got = names(reply.rawHeaders);
    for (const h of ['x-hop-resp', 'proxy-authenticate']) expect(got).not.toContain(h);
    expect(reply.headers['keep-alive'] ?? '').not.toBe('timeout=99');
    expect(reply.headers.connection ?? '').not.toMatch(/x-hop-resp/i);
    expect(json(reply).email).toBe('alice@example.com');
  });

  it('refuses unmatched and non-canonical paths without forwarding them; answers its health path', async () => {
    const before = (await received()).length;
    expect(json(await call(url, 'GET', '/customers'))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(json(await call(url, 'GET', '/static/../customers'))).toMatchObject({ status: 400, code: 'PATH_NOT_CANONICAL' });
    expect(json(await call(url, 'GET', '/static/%2e%2e/customers'))).toMatchObject({ status: 400, code: 'PATH_NOT_CANONICAL' });
    expect(json(await call(url, 'POST', '/customers/', { headers: bearer('ingest') }))).toMatchObject({ status: 400, code: 'PATH_NOT_CANONICAL' });
    expect((await received()).length).toBe(before);
    expect(json(await call(url, 'GET', '/_veil/healthz'))).toEqual({ status: 'ok' });
  });

  it('never logs a value', () => {
    for (const clear of cleartexts) expect(gatewayOutput).not.toContain(clear);
    const protectedValues = Object.values(JSON.parse(protectedText)).filter((v): v is string => typeof v === 'string' && v.length > 20);
    for (const p of protectedValues) expect(gatewayOutput).not.toContain(p);
    expect(gatewayOutput).toContain('"route":"customers"');
  });

  it('serves Prometheus metrics by route, outcome and field under /_veil/metrics, with no path, query, header or value in them', async () => {
    const before = (await received()).length;
    // a query string and header values that must not become labels
    expect((await call(url, 'GET', '/static/blob?email=alice%40example.com', { headers: ['X-Trace', 'trace-value-7f3a'] })).status).toBe(200);
    const reply = await call(url, 'GET', '/_veil/metrics');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    // served by the gateway, not forwarded
    expect((await received()).length).toBe(before + 1);
    const text = reply.body.toString('utf8');
    const found = samples(text);
    const value = (name: string, labels: Record<string, string>) =>
      found.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);

    expect(value('veil_gateway_requests_total', { route: 'customers', outcome: 'forwarded', status: '200' })).toBeGreaterThanOrEqual(2);
    expect(value('veil_gateway_requests_total', { route: 'customers', outcome: 'ACTION_NOT_GRANTED', status: '403' })).toBe(1);
    expect(value('veil_gateway_requests_total', { route: 'customers', outcome: 'BODY_TOO_LARGE', status: '413' })).toBe(3);
    expect(value('veil_gateway_requests_total', { route: 'unmatched', outcome: 'NOT_FOUND', status: '404' })).toBe(1);
    expect(value('veil_gateway_requests_total', { route: 'reveal', outcome: 'forwarded', status: '418' })).toBe(1);
    expect(value('veil_gateway_requests_total', { route: 'static', outcome: 'forwarded', status: '200' })).toBe(2);
    // protected on the way in; revealed, masked or kept on the way out
    expect(value('veil_gateway_fields_total', { route: 'customers', field: 'Customer.email', result: 'protected' })).toBeGreaterThanOrEqual(4);
    expect(value('veil_gateway_fields_total', { route: 'reveal', field: 'Customer.cardNumber', result: 'revealed' })).toBeGreaterThanOrEqual(1);
    expect(value('veil_gateway_fields_total', { route: 'reveal', field: 'Customer.cardNumber', result: 'Mask' })).toBeGreaterThanOrEqual(1);
    expect(value('veil_gateway_fields_total', { route: 'reveal', field: 'Customer.name', result: 'kept' })).toBeGreaterThanOrEqual(1);
    // upstream latency per route: one observation per request sent upstream
    expect(value('veil_gateway_upstream_duration_seconds_count', { route: 'static', result: 'response' })).toBe(2);
    expect(value('veil_gateway_upstream_duration_seconds_count', { route: 'customers', result: 'response' })).toBeGreaterThanOrEqual(2);

    // labels hold route names, fields, statuses and codes only
    const labelValues = new Set(found.flatMap((s) => Object.values(s.labels)));
    for (const v of labelValues) expect(v).toMatch(/^[A-Za-z0-9_.+-]*$/);
    for (const leak of [...cleartexts, 'alice%40example.com', 'trace-value-7f3a', '/static', '/customers', tokens.fraud!, 'abc.def.ghi'])
      expect(text).not.toContain(leak);
    const protectedValues = Object.values(JSON.parse(protectedText)).filter((v): v is string => typeof v === 'string' && v.length > 10);
    for (const p of protectedValues) expect(text).not.toContain(p);
  });

  it('drains on SIGTERM: an exchange in flight completes, then the process exits 0', async () => {
    const inFlight = call(url, 'GET', '/slow');
    await waitFor(async () => (await received()).at(-1)?.target === '/slow', 5000, 'the slow request upstream');
    const exited = once(gateway, 'exit');
    gateway.kill('SIGTERM');
    const reply = await inFlight;
    expect(reply.status).toBe(200);
    expect(reply.body.toString()).toBe('slow');
    const [code] = await exited;
    expect(code).toBe(0);
  });
});
