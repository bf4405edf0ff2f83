import { VeilError } from '../../engine/index.ts';
import type { PipelineConfig } from '../config/index.ts';

/**
 * `veil stream rewrap`: what re-protects a clean topic after a key rotation, named against the
 * protect pipeline whose records it holds (that pipeline's fields, key, format and missing rule).
 */
export interface RewrapSpec {
  /** the clean topic to read (default: the pipeline's sink topic) */
  from?: string;
  /** the topic the re-protected records go to (never the one read) */
  to: string;
  /** the identity that may both unprotect and protect the pipeline's fields */
  roles: string[];
  rightsEvidences: Record<string, string>;
  /** the processing context of the unprotect half (default Action=Unprotect) */
  unprotectEvidences: Record<string, string>;
  /** default: the pipeline's dead-letter topic */
  deadLetterTopic?: string;
  /** default veil-rewrap-<pipeline> */
  groupId?: string;
}

/** A protect pipeline's configuration turned into its rewrap: clean topic in, new topic out, the same fields. */
export function rewrapPipeline(name: string, base: PipelineConfig, spec: RewrapSpec): PipelineConfig {
  const from = spec.from ?? ('topic' in base.sink ? base.sink.topic : undefined);
  if (!from) throw new VeilError('CONFIG_INVALID', `pipeline ${name} renames its sink topics: name the clean topic to rewrap with --from`);
  if (from === spec.to) throw new VeilError('CONFIG_INVALID', 'rewrap writes to a new topic, not the one it reads (--to must differ from --from)');
  const deadLetterTopic = spec.deadLetterTopic ?? base.deadLetterTopic;
  if (deadLetterTopic === from || deadLetterTopic === spec.to)
    throw new VeilError('CONFIG_INVALID', `the dead-letter topic ${deadLetterTopic} is the topic rewrap reads or writes`);
  return {
    ...base,
    source: { topics: [from] },
    sink: { topic: spec.to },
    deadLetterTopic,
    groupId: spec.groupId ?? `veil-rewrap-${name}`,
    // a clean record was validated on its way in; its protected values would not pass the raw schema
    validate: false,
    // a clean record passed the unmapped guard on its way in; values the guard protected are not re-protected (only mapped paths are)
    unmapped: 'pass',
    roles: spec.roles,
    rightsEvidences: spec.rightsEvidences,
    delivery: 'exactly-once',
  };
}
