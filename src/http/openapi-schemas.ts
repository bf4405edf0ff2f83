import { jsonSchemas, UUID } from '../engine/index.ts';
import { ERROR_CATALOG } from '../errors/catalog.ts';
import { OAUTH_ERRORS } from '../errors/codes.ts';
import { serviceSchema } from './service-config.ts';
import type { BodyLimits } from './transform-body.ts';

type Schema = Record<string, unknown>;

/** service.limits as the configuration defaults them: what schemas/openapi.json documents. */
export const DEFAULT_LIMITS: BodyLimits = serviceSchema.parse({}).limits;

/**
 * The guid the engine accepts (src/engine/request/schema.ts: any RFC 9562 UUID, either case),
 * as JSON Schema: a pattern has no flags, so the case-insensitive hex becomes explicit, and the
 * fixed length rules out what Python's `$` would let through (a trailing newline).
 */
export const UUID_SCHEMA: Schema = {
  type: 'string',
  format: 'uuid',
  minLength: 36,
  maxLength: 36,
  pattern: UUID.flags === 'i' ? UUID.source.replaceAll('[0-9a-f]', '[0-9a-fA-F]') : UUID.source,
};

/**
 * The engine's transform request schema (generated from its zod schema) with what the HTTP
 * service checks beside it: guids are UUIDs (GUID_INVALID), the call-size limits (413
 * LIMIT_EXCEEDED, 422 VALUE_TOO_LONG). What JSON Schema cannot say is in the descriptions:
 * guids are unique in the call, requests refer to contexts of the call, and the instance limit
 * counts the whole call.
 */
export function transformRequestSchema(limits: BodyLimits): Schema {
  const s = structuredClone(jsonSchemas()['transform-request.schema.json']) as Schema;
  delete s.$id;
  delete s.$schema;
  const at = (node: Schema, ...path: string[]): Schema =>
    path.reduce((n, k) => {
      const next = (n as Record<string, unknown>)[k];
      if (typeof next !== 'object' || next === null) throw new Error(`transform request schema: no ${path.join('/')}`);
      return next as Schema;
    }, node);
  const props = (node: Schema) => at(node, 'properties');
  for (const context of ['rightsContexts', 'processingContexts'])
    props(at(props(s), context, 'items')).guid = { ...UUID_SCHEMA, description: 'Unique in the call (compared case-insensitively)' };
  const requests = at(props(s), 'requests');
  requests.maxItems = limits.requests;
  const request = props(at(requests, 'items'));
  request.guid = { ...UUID_SCHEMA, description: 'Unique in the call (compared case-insensitively)' };
  request.rightsContext = { ...UUID_SCHEMA, description: 'The guid of an element of rightsContexts' };
  request.processingContext = { ...UUID_SCHEMA, description: 'The guid of an element of processingContexts' };
  const instances = at(request, 'instances');
  instances.maxItems = limits.instancesPerCall;
  instances.description = `At most ${limits.instancesPerCall} instances in the whole call`;
  const value = at(props(at(instances, 'items')), 'value');
  value.maxLength = limits.valueLength;
  // JSON Schema counts code points; service.limits.valueLength counts UTF-16 code units
  value.description = `At most ${limits.valueLength} UTF-16 code units (service.limits.valueLength): a character outside the Basic Multilingual Plane counts as two`;
  s.description =
    'Spec §2.1. Beyond this schema, a call is refused when a guid repeats (GUID_DUPLICATE), a request names a context that is not in the call (REFERENCE_UNRESOLVED), its contexts match no configuration (400/403), or its fields and values do not (403/422): docs/errors.md, "How a call fails".';
  return s;
}

export function transformResponseSchema(): Schema {
  const s = structuredClone(jsonSchemas()['transform-response.schema.json']) as Schema;
  delete s.$id;
  delete s.$schema;
  return s;
}

/** RFC 9457 problem details as src/errors/problem.ts writes them (problemOf). */
export const PROBLEM_SCHEMA: Schema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'code', 'retriable'],
  additionalProperties: false,
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer', minimum: 400, maximum: 599 },
    detail: { type: 'string' },
    code: { type: 'string', enum: Object.keys(ERROR_CATALOG) },
    retriable: { type: 'boolean' },
    instance: { type: 'string' },
    pointer: { type: 'string', description: 'JSON pointer of the first offending element' },
    errors: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['code', 'pointer', 'message'],
        additionalProperties: false,
        properties: {
          code: { type: 'string', enum: Object.keys(ERROR_CATALOG) },
          pointer: { type: 'string' },
          message: { type: 'string' },
          request: { type: 'string' },
          instance: { type: 'integer', minimum: 0 },
          className: { type: 'string' },
          propertyName: { type: 'string' },
        },
      },
    },
  },
};

/** The form of RFC 6749 §4.4.2 with client_secret_post (§2.3.1); Basic is the alternative. */
export const TOKEN_FORM_SCHEMA: Schema = {
  type: 'object',
  required: ['grant_type', 'client_id', 'client_secret'],
  // unknown parameters are ignored, but none may repeat: one string each
  additionalProperties: { type: 'string' },
  properties: {
    grant_type: { type: 'string', enum: ['client_credentials'] },
    client_id: { type: 'string', minLength: 1 },
    client_secret: { type: 'string', minLength: 1 },
    scope: { type: 'string', description: 'Accepted and ignored: the roles come from the client configuration' },
  },
  description:
    'client_id and client_secret may come in an `Authorization: Basic` header instead (client_secret_basic), not both; a parameter must not repeat (400 invalid_request). Unknown parameters are ignored (RFC 6749 §3.2).',
};

export const TOKEN_RESPONSE_SCHEMA: Schema = {
  type: 'object',
  required: ['access_token', 'token_type', 'expires_in'],
  additionalProperties: false,
  properties: { access_token: { type: 'string', minLength: 1 }, token_type: { const: 'Bearer' }, expires_in: { type: 'integer', minimum: 1 } },
};

export const OAUTH_ERROR_SCHEMA: Schema = {
  type: 'object',
  required: ['error'],
  additionalProperties: false,
  properties: { error: { enum: Object.keys(OAUTH_ERRORS) }, error_description: { type: 'string' } },
};

const strings = (...names: string[]) => Object.fromEntries(names.map((n) => [n, { type: 'string', minLength: 1 }]));
const lists = (...names: string[]) => Object.fromEntries(names.map((n) => [n, { type: 'array', items: { type: 'string' }, minItems: 1 }]));
const DISCOVERY_LISTS = [
  'grant_types_supported',
  'token_endpoint_auth_methods_supported',
  'token_endpoint_auth_signing_alg_values_supported',
  'id_token_signing_alg_values_supported',
  'response_types_supported',
  'subject_types_supported',
];

export const DISCOVERY_SCHEMA: Schema = {
  type: 'object',
  required: ['issuer', 'token_endpoint', 'jwks_uri', ...DISCOVERY_LISTS],
  additionalProperties: false,
  properties: { ...strings('issuer', 'token_endpoint', 'jwks_uri'), ...lists(...DISCOVERY_LISTS) },
};

export const JWKS_SCHEMA: Schema = {
  type: 'object',
  required: ['keys'],
  additionalProperties: false,
  properties: {
    keys: {
      type: 'array',
      items: {
        type: 'object',
        required: ['kty', 'crv', 'x', 'y', 'kid', 'alg', 'use'],
        additionalProperties: false,
        properties: { kty: { const: 'EC' }, crv: { const: 'P-256' }, ...strings('x', 'y', 'kid'), alg: { const: 'ES256' }, use: { const: 'sig' } },
      },
    },
  },
};

export const statusSchema = (...values: string[]): Schema => ({
  type: 'object',
  required: ['status'],
  additionalProperties: false,
  properties: { status: { enum: values } },
});

/** GET /healthz: the status and the running configuration version's number and hash (veil.config.version); failing, why (codes and reasons, never values). */
export const healthSchema = (status: 'ok' | 'failing'): Schema => ({
  type: 'object',
  required: ['status', 'configuration'],
  additionalProperties: status === 'failing',
  properties: {
    status: { enum: [status] },
    configuration: {
      type: 'object',
      required: ['version', 'hash'],
      additionalProperties: false,
      properties: { version: { type: 'integer', minimum: 1 }, hash: { type: 'string' } },
    },
  },
});
