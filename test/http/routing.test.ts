import { METHODS, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/http/openapi.ts';
import { startTestService, type TestService } from '../helpers/http-service.ts';
import { expectProblem, type Reply } from './support.ts';

/**
 * 404 and 405 are decided from the request line: every method a path does not support gets 405
 * with the path's Allow header, whatever the method and whatever body it carries.
 */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

/** Every route of the service and the methods it serves. */
const ROUTES: Record<string, string[]> = {
  '/transform': ['POST'],
  '/connect/token': ['POST'],
  '/.well-known/openid-configuration': ['GET', 'HEAD'],
  '/.well-known/jwks.json': ['GET', 'HEAD'],
  '/healthz': ['GET', 'HEAD'],
  '/readyz': ['GET', 'HEAD'],
  '/metrics': ['GET', 'HEAD'],
  '/openapi.json': ['GET', 'HEAD'],
};

/** Any method (fetch refuses some, such as TRACE), with an optional body. */
function send(method: string, path: string, body?: { type: string; text: string }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${svc.url}${path}`,
      { method, headers: body ? { 'content-type': body.type, 'content-length': Buffer.byteLength(body.text) } : {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const headers = new Headers(Object.entries(res.headers).map(([k, v]) => [k, String(v)] as [string, string]));
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({
            res: new Response(null, { status: res.statusCode! }),
            status: res.statusCode!,
            headers,
            text,
            json,
            requestId: headers.get('x-request-id') ?? '',
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body?.text);
  });
}

// CONNECT is not a request to a resource: Node hands it to 'connect' listeners, and veil has none
const METHODS_TRIED = METHODS.filter((m) => m !== 'CONNECT');

describe('405 Method Not Allowed with Allow', () => {
  it('knows the methods Node parses, QUERY and PROPFIND among them', () => {
    expect(METHODS_TRIED).toEqual(expect.arrayContaining(['QUERY', 'PROPFIND', 'TRACE', 'OPTIONS', 'PATCH', 'DELETE', 'PUT']));
  });

  it.each(Object.entries(ROUTES))('%s: every other method gets 405 with Allow: %s', async (path, allowed) => {
    for (const method of METHODS_TRIED.filter((m) => !allowed.includes(m))) {
      const reply = await send(method, path);
      expect(reply.status, `${method} ${path}: ${reply.text}`).toBe(405);
      expect(reply.headers.get('allow'), `${method} ${path}`).toBe(allowed.join(', '));
      if (method !== 'HEAD') expectProblem(reply, 'METHOD_NOT_ALLOWED');
    }
  });

  it('does not read the body of a refused method: a QUERY with broken JSON is 405, not 400', async () => {
    for (const body of [
      { type: 'application/json', text: '{"broken' },
      { type: 'application/x-www-form-urlencoded', text: 'a=b' },
      { type: 'text/plain', text: 'x' },
    ]) {
      const reply = await send('QUERY', '/readyz', body);
      expectProblem(reply, 'METHOD_NOT_ALLOWED');
      expect(reply.headers.get('allow')).toBe('GET, HEAD');
    }
    expectProblem(await send('PROPFIND', '/transform', { type: 'application/json', text: '[' }), 'METHOD_NOT_ALLOWED');
  });

  it('answers unknown paths 404 for any method, without reading their bodies', async () => {
    for (const method of ['GET', 'POST', 'QUERY', 'PROPFIND', 'OPTIONS']) {
      expectProblem(await send(method, '/nope', { type: 'application/json', text: '{"broken' }), 'NOT_FOUND');
    }
  });

  it('still serves the declared methods, HEAD included', async () => {
    expect((await send('GET', '/healthz')).status).toBe(200);
    expect((await send('HEAD', '/readyz')).status).toBe(200);
  });

  it('lists in Allow exactly the methods the OpenAPI document declares (and HEAD beside GET)', async () => {
    const doc = openApiDocument() as { paths: Record<string, Record<string, unknown>> };
    for (const [path, operations] of Object.entries(doc.paths)) {
      const allow = (await send('DELETE', path)).headers.get('allow')!.split(', ');
      const declared = Object.keys(operations).map((m) => m.toUpperCase());
      expect(
        allow.filter((m) => m !== 'HEAD'),
        path,
      ).toEqual(declared);
      expect(allow.includes('HEAD'), path).toBe(declared.includes('GET'));
    }
  });
});
