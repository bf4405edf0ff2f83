import { ERROR_CATALOG, jsonSchemas } from '../engine/index.ts';

/**
 * The OpenAPI 3.1 document of the HTTP service, built from the engine's zod-generated JSON
 * Schemas; schemas/openapi.json holds a copy that a test keeps in sync.
 */
export function openApiDocument(serverUrl = 'http://localhost:8080'): Record<string, unknown> {
  const s = jsonSchemas();
  const strip = (schema: unknown) => Object.fromEntries(Object.entries(schema as object).filter(([k]) => k !== '$schema' && k !== '$id'));
  const problem = (codes: string[]) => ({
    description: codes.join(', '),
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  });
  const byStatus = (status: number) => Object.entries(ERROR_CATALOG).filter(([, e]) => e.status === status).map(([c]) => c);
  return {
    openapi: '3.1.0',
    info: { title: 'veil Transform Service', version: '1', description: 'Protects and unprotects field values (Transform Service specification).' },
    servers: [{ url: serverUrl }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: {
        TransformRequest: strip(s['transform-request.schema.json']),
        TransformResponse: strip(s['transform-response.schema.json']),
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status', 'detail', 'code', 'retriable'],
          properties: {
            type: { type: 'string' }, title: { type: 'string' }, status: { type: 'integer' }, detail: { type: 'string' },
            code: { type: 'string', enum: Object.keys(ERROR_CATALOG) }, retriable: { type: 'boolean' }, instance: { type: 'string' }, pointer: { type: 'string' },
            errors: { type: 'array', items: { type: 'object', required: ['code', 'pointer', 'message'], properties: { code: { type: 'string' }, pointer: { type: 'string' }, message: { type: 'string' }, request: { type: 'string' }, instance: { type: 'integer' }, className: { type: 'string' }, propertyName: { type: 'string' } } } },
          },
        },
        TokenResponse: { type: 'object', required: ['access_token', 'token_type', 'expires_in'], properties: { access_token: { type: 'string' }, token_type: { const: 'Bearer' }, expires_in: { type: 'integer' } } },
        OAuthError: { type: 'object', required: ['error'], properties: { error: { enum: ['invalid_request', 'invalid_client', 'unsupported_grant_type', 'invalid_scope', 'slow_down'] }, error_description: { type: 'string' } } },
      },
    },
    paths: {
      '/transform': {
        post: {
          operationId: 'transform',
          security: [{ bearer: [] }],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/TransformRequest' } } } },
          responses: {
            200: { description: 'One response per request, linked by request', content: { 'application/json': { schema: { $ref: '#/components/schemas/TransformResponse' } } } },
            ...Object.fromEntries([400, 401, 403, 413, 415, 422, 429, 500, 503].map((st) => [st, problem(byStatus(st))])),
          },
        },
      },
      '/connect/token': {
        post: {
          operationId: 'token',
          requestBody: {
            required: true,
            content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', required: ['grant_type'], properties: { grant_type: { const: 'client_credentials' }, client_id: { type: 'string' }, client_secret: { type: 'string' }, scope: { type: 'string' } } } } },
          },
          responses: {
            200: { description: 'Access token', content: { 'application/json': { schema: { $ref: '#/components/schemas/TokenResponse' } } } },
            400: { description: 'RFC 6749 §5.2 error', content: { 'application/json': { schema: { $ref: '#/components/schemas/OAuthError' } } } },
            401: { description: 'invalid_client', content: { 'application/json': { schema: { $ref: '#/components/schemas/OAuthError' } } } },
            429: { description: 'too many failed authentications', content: { 'application/json': { schema: { $ref: '#/components/schemas/OAuthError' } } } },
          },
        },
      },
      '/.well-known/openid-configuration': { get: { operationId: 'discovery', responses: { 200: { description: 'OpenID provider metadata', content: { 'application/json': { schema: { type: 'object' } } } } } } },
      '/.well-known/jwks.json': { get: { operationId: 'jwks', responses: { 200: { description: 'Token signing keys', content: { 'application/json': { schema: { type: 'object', required: ['keys'], properties: { keys: { type: 'array' } } } } } } } } },
      '/healthz': { get: { operationId: 'health', responses: { 200: { description: 'alive', content: { 'application/json': { schema: { type: 'object' } } } } } } },
      '/readyz': { get: { operationId: 'ready', responses: { 200: { description: 'ready', content: { 'application/json': { schema: { type: 'object' } } } }, 503: { description: 'not ready', content: { 'application/json': { schema: { type: 'object' } } } } } } },
      '/metrics': { get: { operationId: 'metrics', responses: { 200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } } } } },
    },
  };
}
