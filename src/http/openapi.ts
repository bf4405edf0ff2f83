import { ERROR_CATALOG } from '../errors/catalog.ts';
import {
  DEFAULT_LIMITS,
  DISCOVERY_SCHEMA,
  JWKS_SCHEMA,
  OAUTH_ERROR_SCHEMA,
  PROBLEM_SCHEMA,
  TOKEN_FORM_SCHEMA,
  TOKEN_RESPONSE_SCHEMA,
  healthSchema,
  statusSchema,
  transformRequestSchema,
  transformResponseSchema,
} from './openapi-schemas.ts';
import type { BodyLimits } from './transform-body.ts';

type Schema = Record<string, unknown>;

/**
 * The OpenAPI 3.1 document of the HTTP service: every operation, every status it can answer
 * and the exact shape of every body, so that a schema-driven fuzzer (scripts/schemathesis.sh)
 * finds the service and the document in agreement. Request schemas come from the engine's zod
 * schemas plus the HTTP checks (UUID guids, the configured limits); schemas/openapi.json holds
 * the document for the default limits, which a test keeps in sync.
 */
export function openApiDocument(serverUrl = 'http://localhost:8080', limits: BodyLimits = DEFAULT_LIMITS): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'veil Transform Service',
      version: '1',
      description:
        'Protects and unprotects field values (Transform Service specification). Errors are RFC 9457 problem details with a stable code (docs/errors.md). A method a path does not declare gets 405 with an Allow header; an unknown path 404.',
    },
    servers: [{ url: serverUrl }],
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'An access token from POST /connect/token, or from a configured external issuer',
        },
      },
      schemas: {
        TransformRequest: transformRequestSchema(limits),
        TransformResponse: transformResponseSchema(),
        Problem: PROBLEM_SCHEMA,
        TokenRequest: TOKEN_FORM_SCHEMA,
        TokenResponse: TOKEN_RESPONSE_SCHEMA,
        OAuthError: OAUTH_ERROR_SCHEMA,
        Discovery: DISCOVERY_SCHEMA,
        Jwks: JWKS_SCHEMA,
      },
    },
    paths: { '/transform': transformPath(), '/connect/token': tokenPath(), ...publicPaths() },
  };
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Schema, headers?: Schema) => ({ content: { 'application/json': { schema } }, ...(headers ? { headers } : {}) });
const codes = (status: number) =>
  Object.entries(ERROR_CATALOG)
    .filter(([, e]) => e.status === status)
    .map(([c]) => c);
const problem = (status: number, description = codes(status).join(', '), headers?: Schema) => ({
  description,
  content: { 'application/problem+json': { schema: ref('Problem') } },
  ...(headers ? { headers } : {}),
});
const header = (description: string, schema: Schema = { type: 'string' }) => ({ required: true, description, schema });
const retryAfter = () => ({ 'Retry-After': header('Seconds to wait', { type: 'string', pattern: '^[0-9]+$' }) });
const noStore = () => ({ 'Cache-Control': header('no-store', { const: 'no-store' }) });
// the body read timeout and the size limit apply to every body, before any route sees it
const bodyLimits = () => ({
  408: problem(408, 'REQUEST_TIMEOUT: the body did not arrive within service.limits.bodyReadTimeoutMs (default 30 s); the connection closes'),
  413: problem(413, 'BODY_TOO_LARGE (over service.limits.bodyBytes), LIMIT_EXCEEDED'),
});
const get = (operationId: string, summary: string, responses: Schema) => ({ get: { operationId, summary, responses } });

function transformPath(): Schema {
  return {
    post: {
      operationId: 'transform',
      summary: 'Protect or unprotect field values (spec §4.1)',
      security: [{ bearer: [] }],
      requestBody: { required: true, content: { 'application/json': { schema: ref('TransformRequest'), example: EXAMPLE_REQUEST } } },
      responses: {
        200: { description: 'One response per request, linked by request', ...json(ref('TransformResponse')) },
        400: problem(400),
        401: problem(401, undefined, { 'WWW-Authenticate': header('Bearer realm="veil", with error="invalid_token" unless the token is missing') }),
        403: problem(403),
        ...bodyLimits(),
        415: problem(415),
        422: problem(422),
        429: problem(429, undefined, retryAfter()),
        500: problem(500),
        503: problem(503),
      },
    },
  };
}

function tokenPath(): Schema {
  return {
    post: {
      operationId: 'token',
      summary: 'OAuth 2.0 client credentials (RFC 6749 §4.4) → RFC 9068 access token',
      requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema: ref('TokenRequest') } } },
      responses: {
        200: { description: 'Access token', ...json(ref('TokenResponse'), noStore()) },
        400: { description: 'RFC 6749 §5.2: invalid_request, unsupported_grant_type', ...json(ref('OAuthError'), noStore()) },
        401: { description: 'invalid_client (WWW-Authenticate: Basic when Basic credentials were sent)', ...json(ref('OAuthError'), noStore()) },
        ...bodyLimits(),
        429: {
          description: 'slow_down: too many failed authentications for the client id or address',
          ...json(ref('OAuthError'), { ...noStore(), ...retryAfter() }),
        },
        500: problem(500),
      },
    },
  };
}

/** what anyone may read: the OpenID metadata, the key sets, health, readiness, metrics */
function publicPaths(): Record<string, Schema> {
  return {
    '/.well-known/openid-configuration': get('discovery', 'OpenID provider metadata', {
      200: { description: 'Issuer, token endpoint, JWKS', ...json(ref('Discovery')) },
    }),
    '/.well-known/jwks.json': get('jwks', 'Token signing keys', { 200: { description: 'The public keys of every signing key version', ...json(ref('Jwks')) } }),
    '/.well-known/veil-receipt-keys.json': get('receiptKeys', 'Erasure receipt keys', {
      200: {
        description:
          'The public keys of every version of the erasure receipt key (veil-receipts), each with kid, alg ES256 and use sig: receipts verify against them (docs/erasure.md); tokens never do',
        ...json(ref('Jwks')),
      },
    }),
    '/healthz': get('health', 'Liveness', {
      200: { description: 'alive, with the running configuration version', ...json(healthSchema('ok')) },
      503: { description: "failing: the KEK's lease lapsed (kek) or the control store is no longer followed (controlStore)", ...json(healthSchema('failing')) },
    }),
    '/readyz': get('ready', 'Readiness', {
      200: { description: 'ready', ...json(statusSchema('ready')) },
      503: { description: 'starting or draining', ...json(statusSchema('not ready')) },
    }),
    '/metrics': get('metrics', 'Prometheus metrics', {
      200: { description: 'Prometheus text format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } },
    }),
  };
}

/** The README's request: role support protects an email. */
const EXAMPLE_REQUEST = {
  rightsContexts: [{ guid: '11111111-1111-4111-8111-111111111111', evidences: [{ name: 'Role', value: 'support' }] }],
  processingContexts: [{ guid: '22222222-2222-4222-8222-222222222222', evidences: [{ name: 'Action', value: 'Protect' }] }],
  requests: [
    {
      guid: '33333333-3333-4333-8333-333333333333',
      rightsContext: '11111111-1111-4111-8111-111111111111',
      processingContext: '22222222-2222-4222-8222-222222222222',
      instances: [{ className: 'Customer', propertyName: 'email', value: 'alice@example.com' }],
    },
  ],
};
