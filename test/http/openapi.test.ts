import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UUID } from '../../src/engine/index.ts';
import { ERROR_CATALOG } from '../../src/errors/catalog.ts';
import { openApiDocument } from '../../src/http/openapi.ts';
import { DEFAULT_LIMITS, UUID_SCHEMA } from '../../src/http/openapi-schemas.ts';
import { transformBodyChecker } from '../../src/http/transform-body.ts';
import { GATEWAY_ONLY_CODES } from '../helpers/error-codes.ts';
import { call, startWith } from './support.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

/**
 * The OpenAPI document states what the service checks: guids as the engine's UUID, the limits
 * the service is configured with, every status an operation can answer.
 */

const hex = fc.constantFrom(...'0123456789abcdefABCDEF');
const hexes = (n: number) => fc.array(hex, { minLength: n, maxLength: n }).map((a) => a.join(''));
const uuidLike = fc.tuple(hexes(8), hexes(4), hexes(4), hexes(4), hexes(12)).map((p) => p.join('-'));
const nearMiss = fc
  .tuple(uuidLike, fc.constantFrom('', '\n', ' ', 'g', '-', '{', 'urn:uuid:'), fc.boolean(), fc.nat({ max: 35 }))
  .map(([u, extra, before, cut]) => (extra === '' ? u.slice(0, cut) + u.slice(cut + 1) : before ? extra + u : u + extra));

describe('the guid schema', () => {
  it('accepts exactly what the engine accepts as a UUID (pattern and length; format uuid agrees)', () => {
    const pattern = new RegExp(UUID_SCHEMA.pattern as string, 'u');
    const accepts = (s: string) => pattern.test(s) && [...s].length >= (UUID_SCHEMA.minLength as number) && [...s].length <= (UUID_SCHEMA.maxLength as number);
    fc.assert(
      fc.property(fc.oneof(uuidLike, nearMiss, fc.uuid(), fc.string({ maxLength: 40 })), (s) => {
        expect(accepts(s), JSON.stringify(s)).toBe(UUID.test(s));
      }),
      { numRuns: 5000 },
    );
  });
});

describe('the document', () => {
  it('puts the configured limits into the transform request schema, and the defaults into schemas/openapi.json', () => {
    const request = (limits: typeof DEFAULT_LIMITS) => (openApiDocument('http://x', limits) as Loose).components.schemas.TransformRequest;
    const small = request({ requests: 2, instancesPerCall: 3, valueLength: 64 });
    expect(small.properties.requests.maxItems).toBe(2);
    expect(small.properties.requests.items.properties.instances.maxItems).toBe(3);
    expect(small.properties.requests.items.properties.instances.items.properties.value.maxLength).toBe(64);
    expect(DEFAULT_LIMITS).toEqual({ bodyBytes: 4 * 1024 * 1024, requests: 100, instancesPerCall: 10_000, valueLength: 4096, bodyReadTimeoutMs: 30_000 });
    expect(request(DEFAULT_LIMITS).properties.requests.maxItems).toBe(100);
  });

  it('serves the document of the limits the service is configured with', async () => {
    const svc = await startWith('service:\n  limits: { requests: 7, valueLength: 99 }');
    try {
      const doc = (await call(`${svc.url}/openapi.json`)).json;
      expect(doc.components.schemas.TransformRequest.properties.requests.maxItems).toBe(7);
      expect(doc.components.schemas.TransformRequest.properties.requests.items.properties.instances.items.properties.value.maxLength).toBe(99);
    } finally {
      await svc.close();
    }
  });

  it('its example transform request passes the body check', () => {
    const doc = openApiDocument() as Loose;
    const example = doc.paths['/transform'].post.requestBody.content['application/json'].example;
    expect(transformBodyChecker(DEFAULT_LIMITS)(example)).toBe(example);
  });

  it('documents every problem status a transform call can get, with the codes of that status', () => {
    const responses = (openApiDocument() as Loose).paths['/transform'].post.responses;
    /** codes a transform call cannot get: key management, startup, the Kafka pipelines, the admin portal, the gateway and the database socket's leases */
    const elsewhere = new Set([
      'DB_LEASE_UNAVAILABLE',
      'DB_LEASE_INVALID',
      'ADMIN_ROLE_MISSING',
      'CSRF_TOKEN_INVALID',
      'PUBLISH_REFUSED',
      'DRAFT_CHANGED',
      'FOUR_EYES_REQUIRED',
      'DRAFT_LIMIT_EXCEEDED',
      'SANDBOX_BUSY',
      'SIGN_IN_RATE_LIMITED',
      'SESSIONS_FULL',
      'KEY_NOT_FOUND',
      'KEY_EXISTS',
      'KEY_MATERIAL_INVALID',
      'KEYSET_CONFLICT',
      'CONFIG_INVALID',
      'KEYSTORE_INVALID',
      'NOT_FOUND',
      'METHOD_NOT_ALLOWED',
      'RECORD_MALFORMED',
      'RECORD_INVALID',
      'SCHEMA_UNKNOWN',
      'FIELD_MISSING',
      'KEY_MISSING',
      'RECORD_TOO_LARGE',
      'DEAD_LETTER_FAILED',
      'TRANSACTION_ABORTED',
      'REGISTRY_UNAVAILABLE',
      'DEADLINE_EXCEEDED',
      'REPLY_TOPIC_NOT_ALLOWED',
      ...GATEWAY_ONLY_CODES,
    ]);
    for (const [code, entry] of Object.entries(ERROR_CATALOG)) {
      if (elsewhere.has(code)) continue;
      const response = responses[String(entry.status)];
      expect(response?.content['application/problem+json'], `${code} (${entry.status})`).toBeDefined();
      expect(response.description, code).toContain(code);
    }
  });

  it('requires the token form fields the endpoint requires, non-empty', () => {
    const form = (openApiDocument() as Loose).components.schemas.TokenRequest;
    expect(form.required).toEqual(['grant_type', 'client_id', 'client_secret']);
    expect(form.properties.client_id.minLength).toBe(1);
    expect(form.properties.client_secret.minLength).toBe(1);
  });
});
