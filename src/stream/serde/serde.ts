import type { Chain } from '../../engine/index.ts';
import type { Mapping } from './field-mappings.ts';
import type { StreamError } from '../stream-error.ts';
import type { SubjectRead } from './json/json-subject.ts';

/** What to protect in a record value: the pipeline's mapped fields, and what a missing one means. */
export interface RecordProtection {
  maps: readonly Mapping[];
  missing: 'pass' | 'dead-letter';
  /** validate the raw value against its schema before protecting it (json-schema: RECORD_INVALID) */
  validate?: boolean;
  /** mapped paths match keys case-insensitively (the pipeline's `keys: insensitive`); default exact */
  foldKeys?: boolean;
  /** the unmapped guard (pipeline-config.ts unmappedSchema); absent: values no mapping names are not looked at */
  guard?: GuardPlan;
  /**
   * the Confluent schema tags the pipeline maps (`tags`), each tag's chain: a field the writer's
   * schema tags so is protected like a mapped path in that schema's records (registry formats)
   */
  tags?: ReadonlyMap<string, Chain>;
}

/** The unmapped guard bound for a pipeline: what a finding does, where it does not look, and what it protects. */
export interface GuardPlan {
  action: 'dead-letter' | 'protect';
  /** paths (pipeline syntax) the guard does not look at, nor under */
  allow: readonly string[];
  /** the likelihood (1–5, src/drift-guard/value-kinds.ts) a value needs to be a finding; default likely (4) */
  threshold?: number;
  /** action protect: the chain of each kind it protects (a kind not here is dead-lettered) */
  protect: ReadonlyMap<string, Chain>;
  /**
   * action protect may turn a number it finds into a protected string: only where no schema fixes
   * the field's type (format json); elsewhere such a finding is dead-lettered
   */
  retypes: boolean;
}

/**
 * Turns a raw record value into its clean form: every mapped field protected, everything else
 * kept. Failures are StreamErrors: RECORD_MALFORMED / RECORD_INVALID / SCHEMA_UNKNOWN / FIELD_MISSING / value codes
 * (dead-lettered), REGISTRY_UNAVAILABLE (retried).
 */
export interface Serde {
  /** the clean value (Avro: written with the derived clean schema registered for `cleanTopic`) */
  protect(bytes: Buffer, protection: RecordProtection, cleanTopic: string): Promise<Buffer>;
  /**
   * Many values at once, synchronously, for a serde that needs no I/O and no clean topic (JSON,
   * whose clean form is the raw one with values replaced): each value's clean
   * form or the StreamError it is dead-lettered with; the mapped values of all of them are
   * protected as one batch per field (Chain.many). Anything else throws for the whole batch.
   */
  protectManySync?(values: readonly Buffer[], protection: RecordProtection, fields?: (string | undefined)[]): (Buffer | StreamError)[];
  /**
   * Many values at once for a serde that needs I/O (a registry): each value's clean form or the
   * StreamError it is dead-lettered with, the mapped values of all of them protected as one batch
   * per field (Chain.many). A retriable failure (the registry unreachable) rejects the whole batch.
   */
  protectMany?(
    values: readonly Buffer[],
    protection: RecordProtection,
    cleanTopics: readonly string[],
    fields?: (string | undefined)[],
  ): Promise<(Buffer | StreamError)[]>;
  /**
   * Where the format lets a raw value name its data subject at a path without its schema (json,
   * json-schema: the JSON text, read with the scanner the serde protects with), a reader of the
   * subject at `path` (pipeline `subject: { from: value }`). Absent: the format cannot, and the
   * configuration refuses such a pipeline.
   */
  subjectReader?(path: string, foldKeys: boolean): (bytes: Buffer) => SubjectRead;
}
