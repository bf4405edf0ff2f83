import fc from 'fast-check';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transformResponseSchema } from '../../src/engine/index.ts';
import { ERROR_CATALOG } from '../../src/errors/catalog.ts';
import { openApiDocument } from '../../src/http/openapi.ts';
import { startTestService, type TestService } from '../helpers/http-service.ts';

// Property-based fuzzing of every operation of the OpenAPI document: no 5xx, every response
// conforms to the document (the success schema or the problem/OAuth error schema), invalid
// input gets a 4xx.
const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int().min(400).max(599),
    detail: z.string(),
    code: z.enum(Object.keys(ERROR_CATALOG) as [string, ...string[]]),
    retriable: z.boolean(),
    instance: z.string().optional(),
    pointer: z.string().optional(),
    errors: z.array(z.object({ code: z.string(), pointer: z.string(), message: z.string() }).passthrough()).optional(),
  })
  .strict();
const oauthError = z
  .object({
    error: z.enum(['invalid_request', 'invalid_client', 'unsupported_grant_type', 'invalid_scope', 'slow_down']),
    error_description: z.string().optional(),
  })
  .strict();

const guid = fc.oneof(fc.uuid(), fc.string({ maxLength: 40 }), fc.constantFrom('00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'));
const evidence = fc.record({
  name: fc.oneof(fc.constantFrom('Role', 'Action', 'Channel'), fc.string({ maxLength: 10 })),
  value: fc.oneof(fc.constantFrom('Protect', 'Unprotect', 'Mask', 'support', 'fraud', 'ingest'), fc.string({ maxLength: 10 })),
});
const context = fc.record({ guid, evidences: fc.array(evidence, { maxLength: 3 }) });
const instance = fc.record({
  className: fc.oneof(fc.constant('Customer'), fc.string({ maxLength: 10 })),
  propertyName: fc.oneof(fc.constantFrom('email', 'cardNumber', 'nationalId', 'name', 'segmentKey'), fc.string({ maxLength: 10 })),
  value: fc.oneof(fc.string({ maxLength: 30 }), fc.stringMatching(/^[0-9-]{0,24}$/), fc.string({ unit: 'grapheme', maxLength: 20 })),
});
const request = fc.record({ guid, rightsContext: guid, processingContext: guid, instances: fc.array(instance, { maxLength: 5 }) });
/** bodies that follow the schema's shape with random content, and arbitrary JSON */
const transformBody = fc.oneof(
  fc.record({
    rightsContexts: fc.array(context, { maxLength: 2 }),
    processingContexts: fc.array(context, { maxLength: 2 }),
    requests: fc.array(request, { maxLength: 3 }),
  }),
  fc.jsonValue({ maxDepth: 4 }),
);

describe('fuzzing the OpenAPI operations', () => {
  let svc: TestService;
  let token: string;
  beforeAll(async () => {
    svc = await startTestService();
    token = await svc.token();
  });
  afterAll(async () => svc?.close());

  it('the document lists the operations fuzzed here', () => {
    expect(Object.keys(openApiDocument().paths as object).sort()).toEqual([
      '/.well-known/jwks.json',
      '/.well-known/openid-configuration',
      '/.well-known/veil-receipt-keys.json',
      '/connect/token',
      '/healthz',
      '/metrics',
      '/readyz',
      '/transform',
    ]);
  });

  it('POST /transform: never 5xx; 200 bodies match TransformResponse; errors are problem+json with a catalog code', async () => {
    await fc.assert(
      fc.asyncProperty(
        transformBody,
        fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded'),
        fc.constantFrom('valid', 'none', 'junk'),
        async (body, type, auth) => {
          const headers: Record<string, string> = { 'content-type': type };
          if (auth === 'valid') headers.authorization = `Bearer ${token}`;
          if (auth === 'junk') headers.authorization = 'Bearer abc.def.ghi';
          const res = await fetch(`${svc.url}/transform`, { method: 'POST', headers, body: JSON.stringify(body) });
          const text = await res.text();
          expect(res.status, text).toBeLessThan(500);
          if (res.status === 200) {
            const parsed = transformResponseSchema.parse(JSON.parse(text));
            expect(parsed.responses).toHaveLength((body as { requests: unknown[] }).requests.length);
          } else {
            expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
            const p = problemSchema.parse(JSON.parse(text));
            expect(p.status).toBe(res.status);
            expect(ERROR_CATALOG[p.code as keyof typeof ERROR_CATALOG].status).toBe(res.status);
          }
        },
      ),
      { numRuns: 400 },
    );
  }, 120_000);

  it('POST /connect/token: never 5xx; OAuth error bodies per RFC 6749 §5.2', async () => {
    const field = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('client_credentials', 'password', 'veil-dev'));
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.constantFrom('grant_type', 'client_id', 'client_secret', 'scope', 'x'), field), async (form) => {
        const res = await fetch(`${svc.url}/connect/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(form),
        });
        const json = await res.json();
        expect(res.status).toBeLessThan(500);
        if (res.status !== 200) oauthError.parse(json);
      }),
      { numRuns: 150 },
    );
  }, 120_000);

  it('GET on any path: never 5xx, unknown paths are problem+json 404', async () => {
    await fc.assert(
      fc.asyncProperty(fc.webPath(), async (path) => {
        const res = await fetch(`${svc.url}${path.startsWith('/') ? path : `/${path}`}`);
        expect(res.status).toBeLessThan(500);
        if (res.status === 404) problemSchema.parse(await res.json());
        else await res.arrayBuffer();
      }),
      { numRuns: 150 },
    );
  }, 60_000);
});
