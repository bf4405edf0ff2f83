/**
 * The engine's front door: the only module code outside src/engine may import (lint rule
 * `veil/engine-front-door`; tests under test/engine may reach the internals they test).
 */

// transform and bind
export { Engine, type BindRequest, type BoundFields, type Chain, type EngineOptions, type FieldRef, type Plan, type PlannedRequest } from './engine.ts';
export type { Identity } from './identity.ts';

// the request and response bodies (spec §2.1–2.7) and their published JSON Schemas
export { transformResponseSchema, UUID, type TransformRequest, type TransformResponse } from './request/schema.ts';
export { checkIdentifiers } from './identifiers.ts';
export { jsonSchemas } from './schemas.ts';

// errors
export {
  combine,
  ENGINE_ERRORS,
  LayerError,
  layerErrorType,
  layerFaultType,
  ValueError,
  VeilError,
  type EngineErrorCode,
  type ErrorDetail,
  type ErrorEntry,
  type FaultEntry,
  type LayerErrorOptions,
  type LayerFaultOptions,
} from './errors.ts';

// configuration: the engine's sections, their compiler, and the pieces other layers' sections reuse
export { compileConfig, compileConfigText, compileEngineConfig, compileText, configIssuesOf, type CompileResult } from './config/compile.ts';
export { ROLE, type CompiledConfig } from './config/compiled.ts';
export { formatIssue, pointerOf, type ConfigIssue } from './config/issues.ts';
export { engineConfigShape, evidencesSchema, keyIdSchema, nameSchema, type StepConfig } from './config/schema.ts';

// keys: what the engine needs from a keystore, and the key handle only the keystore may open
export { KEY_TYPES, KEY_TYPE_NAMES, type KeyInfo, type KeyProvider, type KeyType } from './key-access/key-provider.ts';
export { MemoryKeyProvider } from './key-access/memory-key-provider.ts';
export { SecretKey, revealKeyBytes } from './key-access/secret-key.ts';
// data subjects' keys (issue 29): what an adapter fetches from the subject-key store before a call
export { isSubjectId, SUBJECT_ID_RULE, type SubjectEntry, type SubjectKeyring } from './key-access/subject-keyring.ts';

// the keyed primitives' contract (AES-SIV, AES-GCM, HMAC-SHA256, FF1, FF3-1), which the native core implements too (issue 42), and the engine's own
export { JS_PRIMITIVES, type GcmPrimitive, type MacPrimitive, type Primitives, type SivPrimitive, type SivSeal } from './crypto/primitives.ts';
export type { NumeralCipher } from './fpe/fpe-format.ts';
// one step's transformer, for golden outputs and benchmarks beside the whole engine
export { createTransformer } from './transformers/registry.ts';
export type { KeyRef, Transformer } from './transformers/transformer.ts';
// the FPE steps' named alphabets (numeral i is character i): what a native FF1 or FF3-1 caller maps values through
export { NAMED_ALPHABETS, type AlphabetName } from './fpe/alphabet.ts';
// the output header and binding label of the keyed steps: what the database door's leased keys hand out (src/db/lease-grant.ts)
export { FORMAT_TAGS, header as outputHeader } from './transformers/output-format.ts';
export { bindingLabel } from './transformers/transformer.ts';

// decisions and traces for the admin portal: the role × field view and the tester's step outputs
export { configuredRoles, decideField, fieldAccess, type FieldAccess, type FieldAccessAnswer, type FieldDecision } from './field-access.ts';
export { traceSteps, type TracedStep } from './trace.ts';
export { pooledRandom } from './crypto/random-pool.ts';
