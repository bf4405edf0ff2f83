import { z } from 'zod';
import { KEY_TYPE_NAMES } from '../key-access/key-provider.ts';
import { ALPHABET_NAMES } from '../fpe/alphabet.ts';

/** Names of classes, properties, contexts, sequences, keys and actions: identifiers, not prose. */
const name = z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'must be a letter then up to 63 letters, digits, _ or -');
const keyId = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'must be lowercase letters, digits, . _ or -');
const count = z.number().int().min(0).max(64);

/** The field a step binds its output to; default `Class.property`, or a shared label for joins across fields. */
const binding = z.string().min(1).max(256).optional();

const ff1Step = z.strictObject({
  type: z.literal('ff1'),
  key: name,
  alphabet: z.enum(ALPHABET_NAMES).optional(),
  customAlphabet: z.string().optional(),
  keepFirst: count.default(0),
  keepLast: count.default(0),
  luhn: z.boolean().default(false),
  tweakHex: z.string().regex(/^([0-9a-fA-F]{2}){0,256}$/, 'must be an even number of hex digits').optional(),
  binding,
});

const ff31Step = z.strictObject({
  type: z.literal('ff3-1'),
  key: name,
  alphabet: z.enum(ALPHABET_NAMES).optional(),
  customAlphabet: z.string().optional(),
  keepFirst: count.default(0),
  keepLast: count.default(0),
  tweakHex: z.string().regex(/^[0-9a-fA-F]{14}$/, 'must be 14 hex digits (56 bits)').optional(),
  binding,
});

export const stepSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('aes-siv'), key: name, binding }),
  z.strictObject({ type: z.literal('aes-gcm'), key: name, binding }),
  ff1Step,
  ff31Step,
  z.strictObject({
    type: z.literal('hmac-sha256'),
    key: name,
    outputBytes: z.number().int().min(16).max(32).default(32),
    binding,
  }),
  z.strictObject({
    type: z.literal('mask'),
    keepFirst: count.default(0),
    keepLast: count.default(0),
    char: z.string().refine((s) => [...s].length === 1, 'must be one character').default('*'),
    preserve: z.string().default(''),
  }),
  z.strictObject({ type: z.literal('redact'), value: z.string().max(256).default('[REDACTED]') }),
]);

export type StepConfig = z.infer<typeof stepSchema>;
export type StepType = StepConfig['type'];

const actionBinding = z.union([
  name,
  z.strictObject({ sequence: name, direction: z.enum(['forward', 'inverse']).default('forward') }),
]);

const property = z.strictObject({
  description: z.string().optional(),
  protect: name,
  /** `inverse`: run the protect sequence's inverse steps in reverse order; `none`: not unprotectable */
  unprotect: z.enum(['inverse', 'none']).default('inverse'),
  actions: z.record(name, actionBinding).default({}),
});

const evidences = z.record(name, z.string().min(1).max(256));

/** `scrypt$N$r$p$salt$hash` (base64url salt and hash) as written by `veil identity hash-secret`. */
const secretHash = z.string().regex(/^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9_-]{16,}\$[A-Za-z0-9_-]{32,}$/, 'must be an scrypt hash from `veil identity hash-secret`');

export const identitySchema = z.strictObject({
  /** `iss` of the tokens veil issues; default: the service's own base URL */
  issuer: z.string().min(1).optional(),
  /** `aud` veil issues and requires on /transform tokens */
  audience: z.string().min(1).default('veil'),
  tokenTtlSeconds: z.number().int().min(30).max(86_400).default(900),
  /** keystore id of the token signing key (type jwt-es256), created on first start */
  signingKey: keyId.default('veil-token-signing'),
  clients: z.record(z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'client ids are 1-64 of A-Z a-z 0-9 . _ -'), z.strictObject({
    description: z.string().optional(),
    secretHash,
    roles: z.array(name).max(64),
  })).default({}),
  external: z.array(z.strictObject({
    issuer: z.string().min(1),
    audience: z.string().min(1),
    jwksUrl: z.url({ protocol: /^https?$/ }),
    /** dotted path of the claim holding the roles, e.g. realm_access.roles (Keycloak) */
    rolesClaim: z.string().regex(/^[A-Za-z0-9_:-]+(\.[A-Za-z0-9_:-]+)*$/).default('roles'),
    algorithms: z.array(z.enum(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'])).min(1).default(['RS256', 'ES256']),
  })).default([]),
});

/** A record path: dot-separated names, `[]` after a name walks every array element (`cards[].number`). */
const recordPath = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*(\[\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[\])?)*$/, 'must be names joined by dots, [] after an array, e.g. cards[].number');
const fieldRef = z.string().regex(/^[A-Za-z][A-Za-z0-9_-]*\.[A-Za-z][A-Za-z0-9_-]*$/, 'must be Class.property');
const topicName = z.string().regex(/^[A-Za-z0-9._-]{1,249}$/, 'must be a Kafka topic name');

export const pipelineSchema = z.strictObject({
  description: z.string().optional(),
  source: z.union([
    z.strictObject({ topics: z.array(topicName).min(1) }),
    /** a regular expression over topic names, e.g. ^raw\.(.+)$ */
    z.strictObject({ pattern: z.string().min(1) }),
  ]),
  /** a fixed clean topic, or a rename of the source topic: from (regex) → to ($1 etc.) */
  sink: z.union([
    z.strictObject({ topic: topicName }),
    z.strictObject({ rename: z.strictObject({ from: z.string().min(1), to: z.string().min(1) }) }),
  ]),
  deadLetterTopic: topicName,
  format: z.enum(['json', 'avro']),
  fields: z.array(z.strictObject({ path: recordPath, field: fieldRef })).min(1),
  /** protect the record key too (so partitioning of the clean topic follows the protected key) */
  key: z.strictObject({ field: fieldRef }).optional(),
  /** what an absent or null mapped field does: pass it through as it is, or dead-letter the record */
  missing: z.enum(['pass', 'dead-letter']).default('pass'),
  /** the identity the pipeline acts with, and the evidences of its contexts */
  roles: z.array(name).min(1),
  rightsEvidences: evidences,
  processingEvidences: evidences,
  delivery: z.enum(['exactly-once', 'at-least-once']).default('exactly-once'),
  groupId: z.string().regex(/^[A-Za-z0-9._-]{1,200}$/).optional(),
});

/** Unprotect on demand over Kafka: requests on one topic, replies only to allowed topics. */
export const responderSchema = z.strictObject({
  description: z.string().optional(),
  requestTopic: topicName,
  /** the reply-to topics a request may name; anything else is refused (never written to) */
  replyTopics: z.array(topicName).min(1),
  /** refused requests that cannot be answered (no or disallowed reply-to) land here, without values */
  deadLetterTopic: topicName,
  groupId: z.string().regex(/^[A-Za-z0-9._-]{1,200}$/).optional(),
});

export const serviceSchema = z.strictObject({
  limits: z.strictObject({
    bodyBytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(4 * 1024 * 1024),
    requests: z.number().int().min(1).max(10_000).default(100),
    instancesPerCall: z.number().int().min(1).max(1_000_000).default(10_000),
    valueLength: z.number().int().min(1).max(1_048_576).default(4096),
  }).prefault({}),
  rateLimit: z.strictObject({
    /** sustained /transform calls per second per client, and the burst above it */
    transformPerSecond: z.number().min(0.1).default(500),
    transformBurst: z.number().int().min(1).default(1000),
    /** failed token requests per minute per client id and per address before 429 */
    tokenFailuresPerMinute: z.number().int().min(1).default(10),
  }).prefault({}),
});

export const configSchema = z.strictObject({
  version: z.literal(1),
  description: z.string().optional(),
  keys: z.record(
    name,
    z.strictObject({
      type: z.enum(KEY_TYPE_NAMES),
      /** keystore id; defaults to the reference name */
      id: keyId.optional(),
      /** pin a key version for protect; required for FPE, whose output cannot carry one */
      version: z.number().int().min(1).optional(),
    }),
  ),
  sequences: z.record(
    name,
    z.strictObject({ description: z.string().optional(), steps: z.array(stepSchema).min(1).max(16) }),
  ),
  classes: z.record(name, z.strictObject({ description: z.string().optional(), properties: z.record(name, property) })),
  rightsContexts: z.record(
    name,
    z.strictObject({
      description: z.string().optional(),
      evidences: evidences,
      grants: z
        .array(
          z.strictObject({
            actions: z.array(name).min(1),
            fields: z.array(z.string().regex(/^(\*|[A-Za-z][A-Za-z0-9_-]*\.(\*|[A-Za-z][A-Za-z0-9_-]*))$/, 'must be Class.property, Class.* or *')).min(1),
          }),
        )
        .min(1),
    }),
  ),
  processingContexts: z.record(
    name,
    z.strictObject({ description: z.string().optional(), evidences: evidences, action: name.optional() }),
  ),
  identity: identitySchema.prefault({}),
  service: serviceSchema.prefault({}),
  pipelines: z.record(name, pipelineSchema).default({}),
  responders: z.record(name, responderSchema).default({}),
});

export type ResponderConfig = z.infer<typeof responderSchema>;

export type PipelineConfig = z.infer<typeof pipelineSchema>;

export type IdentityConfig = z.infer<typeof identitySchema>;
export type ServiceConfig = z.infer<typeof serviceSchema>;

export type ConfigInput = z.input<typeof configSchema>;
export type ConfigDocument = z.infer<typeof configSchema>;
