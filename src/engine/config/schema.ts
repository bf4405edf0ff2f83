import { z } from 'zod';
import { KEY_TYPE_NAMES } from '../key-access/key-provider.ts';
import { ALPHABET_NAMES } from '../fpe/alphabet.ts';

/** Names of classes, properties, contexts, sequences, keys and actions: identifiers, not prose. */
export const nameSchema = z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'must be a letter then up to 63 letters, digits, _ or -');
const name = nameSchema;
/** A keystore key id. */
export const keyIdSchema = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'must be lowercase letters, digits, . _ or -');
const keyId = keyIdSchema;
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
  tweakHex: z
    .string()
    .regex(/^([0-9a-fA-F]{2}){0,256}$/, 'must be an even number of hex digits')
    .optional(),
  binding,
});

const ff31Step = z.strictObject({
  type: z.literal('ff3-1'),
  key: name,
  alphabet: z.enum(ALPHABET_NAMES).optional(),
  customAlphabet: z.string().optional(),
  keepFirst: count.default(0),
  keepLast: count.default(0),
  tweakHex: z
    .string()
    .regex(/^[0-9a-fA-F]{14}$/, 'must be 14 hex digits (56 bits)')
    .optional(),
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
    char: z
      .string()
      .refine((s) => [...s].length === 1, 'must be one character')
      .default('*'),
    preserve: z.string().default(''),
  }),
  z.strictObject({ type: z.literal('redact'), value: z.string().max(256).default('[REDACTED]') }),
]);

export type StepConfig = z.infer<typeof stepSchema>;

const actionBinding = z.union([name, z.strictObject({ sequence: name, direction: z.enum(['forward', 'inverse']).default('forward') })]);

const property = z.strictObject({
  description: z.string().optional(),
  protect: name,
  /** `inverse`: run the protect sequence's inverse steps in reverse order; `none`: not unprotectable */
  unprotect: z.enum(['inverse', 'none']).default('inverse'),
  actions: z.record(name, actionBinding).default({}),
});

/** The evidences a configured context matches, name → value (e.g. Role: support). */
export const evidencesSchema = z.record(name, z.string().min(1).max(256));
const evidences = evidencesSchema;

/**
 * The engine's sections of a configuration: key references, sequences, classes and contexts. The
 * product's configuration file adds sections of other layers (src/app/config-file.ts composes it).
 */
export const engineConfigShape = {
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
      /** `subject`: each data subject's own key, from the subject-key store (docs/erasure.md); default `shared` */
      scope: z.enum(['shared', 'subject']).default('shared'),
    }),
  ),
  /** data subjects' keys (subject-scoped key references): whether an erased subject id may protect again */
  subjects: z
    .strictObject({
      /** `new-key` (default): a returning person gets a new key; `refuse`: an erased id stays refused (SUBJECT_ERASED) */
      returning: z.enum(['new-key', 'refuse']).default('new-key'),
    })
    .default({ returning: 'new-key' }),
  sequences: z.record(name, z.strictObject({ description: z.string().optional(), steps: z.array(stepSchema).min(1).max(16) })),
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
  processingContexts: z.record(name, z.strictObject({ description: z.string().optional(), evidences: evidences, action: name.optional() })),
};

/** A configuration of the engine's sections only (tests, benchmarks, embedding the engine). */
export const engineConfigSchema = z.strictObject(engineConfigShape);

export type EngineConfigDocument = z.infer<typeof engineConfigSchema>;
