import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confluentRegistry } from '../../../src/stream/registry/confluent-registry.ts';
import { streamFailure } from '../../helpers/stream-failure.ts';

/**
 * The HTTP failure mapping against answers a real registry cannot be made to give on demand
 * (5xx, 429, hangs, a proxy's HTML). The real registry is exercised in apicurio.test.ts.
 */
describe('confluentRegistry: failure mapping', () => {
  let server: Server;
  let base: string;
  let handler: (req: IncomingMessage, res: ServerResponse, body: string) => void = () => undefined;
  const seen: { method?: string; url?: string; authorization?: string; contentType?: string; body: string }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, authorization: req.headers.authorization, contentType: req.headers['content-type'], body });
        handler(req, res, body);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/ccompat`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const json = (status: number, body: unknown) => (_req: IncomingMessage, res: ServerResponse) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

  it('speaks the Confluent API: GET /schemas/ids/{id}, POST /subjects/{subject}/versions', async () => {
    handler = (req, res) => (req.method === 'GET' ? json(200, { schema: '"string"', schemaType: 'AVRO', references: [] }) : json(200, { id: 12 }))(req, res);
    const r = confluentRegistry(`${base}/`);
    expect(await r.schemaById(3)).toBe('"string"');
    expect(await r.register('orders clean-value', '"int"')).toBe(12);
    expect(seen.slice(-2).map((s) => [s.method, s.url])).toEqual([
      ['GET', '/api/ccompat/schemas/ids/3'],
      ['POST', '/api/ccompat/subjects/orders%20clean-value/versions'],
    ]);
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ schemaType: 'AVRO', schema: '"int"' });
    expect(seen.at(-1)!.contentType).toBe('application/vnd.schemaregistry.v1+json');
  });

  it('an unknown id (404, error_code 40403) is SCHEMA_UNKNOWN', async () => {
    handler = json(404, { error_code: 40403, message: 'Schema 9 not found' });
    const e = await streamFailure(confluentRegistry(base).schemaById(9));
    expect([e.code, e.retriable]).toEqual(['SCHEMA_UNKNOWN', false]);
    expect(e.message).toMatch(/schema 9: not found \(HTTP 404, error_code 40403: Schema 9 not found\)/);
  });

  it('5xx, 429, 408, 401 are REGISTRY_UNAVAILABLE (retriable)', async () => {
    for (const status of [500, 503, 429, 408, 401]) {
      handler = json(status, { error_code: status * 100, message: 'busy' });
      const e = await streamFailure(confluentRegistry(base).register('s-value', '"string"'));
      expect([status, e.code, e.retriable]).toEqual([status, 'REGISTRY_UNAVAILABLE', true]);
    }
  });

  it('a 404 that is not the Confluent API (a wrong base URL) is REGISTRY_UNAVAILABLE, with a hint', async () => {
    handler = (_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not Found</h1>');
    const e = await streamFailure(confluentRegistry(base).schemaById(1));
    expect(e.code).toBe('REGISTRY_UNAVAILABLE');
    expect(e.message).toMatch(/HTTP 404 — is the URL the Confluent API base/);
  });

  it('a 200 that is not a registry answer is REGISTRY_UNAVAILABLE', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>login</html>');
    expect((await streamFailure(confluentRegistry(base).schemaById(1))).code).toBe('REGISTRY_UNAVAILABLE');
    expect((await streamFailure(confluentRegistry(base).register('s', '"int"'))).code).toBe('REGISTRY_UNAVAILABLE');
  });

  it('a schema the registry refuses (409 incompatible, 422 invalid) is not retriable', async () => {
    for (const [status, code] of [
      [409, 409],
      [422, 42201],
    ] as const) {
      handler = json(status, { error_code: code, message: 'Schema being registered is incompatible with an earlier schema' });
      const e = await streamFailure(confluentRegistry(base).register('clean-value', '"int"'));
      expect([e.code, e.retriable]).toEqual(['SCHEMA_UNKNOWN', false]);
      expect(e.message).toContain(`registering a schema under subject clean-value: refused (HTTP ${status}, error_code ${code}`);
    }
  });

  it('no answer within the timeout is REGISTRY_UNAVAILABLE', async () => {
    handler = () => undefined; // never answers
    const e = await streamFailure(confluentRegistry(base, { timeoutMs: 200 }).schemaById(1));
    expect(e.code).toBe('REGISTRY_UNAVAILABLE');
    expect(e.message).toMatch(/no answer within 200 ms/);
  });

  it('turns credentials in the URL into Basic authentication and keeps them out of messages', async () => {
    handler = json(503, { message: 'down' });
    const withCreds = base.replace('http://', 'http://veil:s%3Acret@');
    const e = await streamFailure(confluentRegistry(withCreds).schemaById(1));
    expect(seen.at(-1)!.authorization).toBe(`Basic ${Buffer.from('veil:s:cret').toString('base64')}`);
    expect(e.message).not.toMatch(/cret|veil:/);
    expect(e.message).toContain(base);
  });
});
