import { z } from 'zod';
import { evidencesSchema, nameSchema, type ConfigIssue } from '../../engine/index.ts';
import { DEFAULT_THRESHOLD, GUARD_KINDS, THRESHOLDS } from '../../drift-guard/index.ts';
import { RECORD_FORMATS } from '../../discover/index.ts';
import { foldKey } from '../../json-bytes/paths.ts';

/** A record path: dot-separated names, `[]` after a name walks every array element (`cards[].number`). */
const recordPath = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*(\[\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[\])?)*$/, 'must be names joined by dots, [] after an array, e.g. cards[].number');
const fieldRef = z.string().regex(/^[A-Za-z][A-Za-z0-9_-]*\.[A-Za-z][A-Za-z0-9_-]*$/, 'must be Class.property');
/**
 * A processor's Prometheus endpoint (`veil stream protect` serves /metrics): http(s), without
 * credentials — the configuration is shown to every portal viewer, so it holds no secret.
 */
const metricsUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL, e.g. http://10.0.0.5:9464/metrics' })
  .max(2048)
  .refine((text) => {
    const url = URL.canParse(text) ? new URL(text) : undefined;
    return !url?.username && !url?.password;
  }, 'must not hold a user or password (the portal shows the configuration)');

export const topicNameSchema = z.string().regex(/^[A-Za-z0-9._-]{1,249}$/, 'must be a Kafka topic name');
const topicName = topicNameSchema;

/**
 * The unmapped guard: what a value at a path no mapping names, found to be personal data by the
 * detectors (src/drift-guard), does to its record. `dead-letter` (default): the record goes to the
 * dead-letter topic (UNMAPPED_PERSONAL_DATA, with the path and kind); `protect`: a kind listed in
 * `protect` is protected as that class.property (others still dead-letter); `report`: the record
 * passes as if the guard were off, and what would have been dead-lettered is counted and logged
 * (path and kind) — for measuring a rollout, it protects nothing; `pass`: no check.
 * `allow`: paths (and everything under them) the guard does not look at. `threshold`: how likely
 * (src/drift-guard/value-kinds.ts LIKELIHOODS) a value must be personal data to count as a finding.
 */
export const UNMAPPED_ACTIONS = ['dead-letter', 'protect', 'report', 'pass'] as const;
export const unmappedSchema = z.union([
  z.enum(UNMAPPED_ACTIONS),
  z.strictObject({
    action: z.enum(UNMAPPED_ACTIONS).default('dead-letter'),
    allow: z.array(recordPath).default([]),
    protect: z.partialRecord(z.enum(GUARD_KINDS), fieldRef).default({}),
    threshold: z.enum(THRESHOLDS).default(DEFAULT_THRESHOLD),
  }),
]);

/** A Confluent schema tag (`confluent:tags`, `(confluent.field_meta).tags`), as written in the schema: `PII`, `PII_EMAIL`. */
const tagName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_.-]{0,99}$/, 'must be a tag name: a letter or _, then letters, digits, _, . or -');

/** how mapped paths match a record's keys: `insensitive` (default; `Email` is `email`, as the gateway matches) or `exact` */
export const keysSchema = z.enum(['insensitive', 'exact']);

/** One entry of the configuration's `pipelines` section: a protect pipeline raw → clean. */
export const pipelineSchema = z.strictObject({
  description: z.string().optional(),
  source: z.union([
    z.strictObject({ topics: z.array(topicName).min(1) }),
    /** a regular expression over topic names, e.g. ^raw\.(.+)$ */
    z.strictObject({ pattern: z.string().min(1) }),
  ]),
  /** a fixed clean topic, or a rename of the source topic: from (regex) → to ($1 etc.) */
  sink: z.union([z.strictObject({ topic: topicName }), z.strictObject({ rename: z.strictObject({ from: z.string().min(1), to: z.string().min(1) }) })]),
  deadLetterTopic: topicName,
  format: z.enum(RECORD_FORMATS),
  fields: z.array(z.strictObject({ path: recordPath, field: fieldRef })).min(1),
  /**
   * avro, json-schema and protobuf: fields the writer's schema tags (Confluent's `confluent:tags`,
   * `(confluent.field_meta).tags`) protected as the class.property their tag maps to, as if
   * mapped, in every schema version that tags them; a tagged field whose tags are not here is
   * unmapped personal data (UNMAPPED_PERSONAL_DATA, kind `tag:<TAG>`)
   */
  tags: z.record(tagName, fieldRef).optional(),
  /** protect the record key too (so partitioning of the clean topic follows the protected key) */
  key: z.strictObject({ field: fieldRef }).optional(),
  /**
   * where a record names its data subject, for fields whose keys are scoped to the subject
   * (docs/erasure.md): `key`, the record key as text (kept as it is unless `key` protects it);
   * `value` with a `path` (json and json-schema pipelines), the string or number at that path of the value
   */
  subject: z.union([z.strictObject({ from: z.literal('key') }), z.strictObject({ from: z.literal('value'), path: recordPath })]).optional(),
  /** what an absent or null mapped field does: pass it through as it is, or dead-letter the record */
  missing: z.enum(['pass', 'dead-letter']).default('pass'),
  keys: keysSchema.default('insensitive'),
  unmapped: unmappedSchema.default('dead-letter'),
  /** the identity the pipeline acts with, and the evidences of its contexts */
  roles: z.array(nameSchema).min(1),
  rightsEvidences: evidencesSchema,
  processingEvidences: evidencesSchema,
  /**
   * json-schema only: validate each raw record against its schema from the registry before
   * protecting it; a record that fails is dead-lettered (RECORD_INVALID)
   */
  validate: z.boolean().default(false),
  delivery: z.enum(['exactly-once', 'at-least-once']).default('exactly-once'),
  groupId: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,200}$/)
    .optional(),
  /**
   * The /metrics URLs of the processes running this pipeline: the admin portal charts their
   * records in / out / dead-lettered and lag. Display only; takes effect on publish.
   */
  metricsUrls: z.array(metricsUrl).max(16).optional(),
});

export type PipelineConfig = z.infer<typeof pipelineSchema>;

export interface UnmappedPolicy {
  action: (typeof UNMAPPED_ACTIONS)[number];
  allow: readonly string[];
  protect: Partial<Record<(typeof GUARD_KINDS)[number], string>>;
  threshold: (typeof THRESHOLDS)[number];
}

/** The pipeline's unmapped guard with its shorthand (`unmapped: pass`) spelled out. */
export function unmappedPolicy(c: Pick<PipelineConfig, 'unmapped'>): UnmappedPolicy {
  const u = c.unmapped;
  return typeof u === 'string' ? { action: u, allow: [], protect: {}, threshold: DEFAULT_THRESHOLD } : u;
}

/**
 * Cross-checks of one pipeline, pointers relative to it: mapped fields are configured, no path is
 * mapped twice, patterns compile, and no clean or dead-letter topic is also a source topic.
 */
export function pipelineIssues(p: PipelineConfig, isField: (className: string, propertyName: string) => boolean): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const error = (pointer: string, message: string) => issues.push({ severity: 'error', pointer, message });
  const check = (ref: string, pointer: string) => {
    const [cls, prop] = ref.split('.') as [string, string];
    if (!isField(cls, prop)) error(pointer, `${ref} is not a configured class.property`);
  };
  p.fields.forEach((f, i) => check(f.field, `/fields/${i}/field`));
  const guard = unmappedPolicy(p);
  for (const [kind, field] of Object.entries(guard.protect)) check(field, `/unmapped/protect/${kind}`);
  if (guard.action === 'protect' && Object.keys(guard.protect).length === 0)
    error('/unmapped/protect', 'action protect names no kind to protect: map a kind to a class.property, e.g. email: Customer.email');
  if (p.key) check(p.key.field, '/key/field');
  for (const [tag, field] of Object.entries(p.tags ?? {})) check(field, `/tags/${tag}`);
  if (p.tags && Object.keys(p.tags).length > 0 && p.format === 'json')
    error('/tags', "tags come from the writer's schema: only avro, json-schema and protobuf pipelines have one (this one is json)");
  // with keys: insensitive, `Email` and `email` are one path
  const paths = p.fields.map((f) => (p.keys === 'exact' ? f.path : foldKey(f.path)));
  paths.forEach((path, i) => {
    const first = paths.indexOf(path);
    if (first !== i)
      error(
        `/fields/${i}/path`,
        `path ${p.fields[i]!.path} is mapped twice${p.fields[first]!.path === p.fields[i]!.path ? '' : ' (keys match case-insensitively: keys: exact tells them apart)'}`,
      );
  });
  p.metricsUrls?.forEach((url, i) => {
    if (p.metricsUrls!.indexOf(url) !== i) error(`/metricsUrls/${i}`, 'is listed twice (its process would be counted twice)');
  });
  for (const [k, re] of [
    ['source', 'pattern' in p.source ? p.source.pattern : undefined],
    ['sink', 'rename' in p.sink ? p.sink.rename.from : undefined],
  ] as const) {
    if (re === undefined) continue;
    try {
      new RegExp(re);
    } catch {
      error(`/${k}`, 'is not a valid regular expression');
    }
  }
  if (p.subject?.from === 'value') {
    const subjectPath = p.subject.path;
    if (p.format !== 'json' && p.format !== 'json-schema')
      error('/subject', `a subject read from the value needs a json or json-schema pipeline (this one is ${p.format}): name it by the record key`);
    if (subjectPath.includes('[]')) error('/subject/path', 'a subject path names one value, not each element of an array');
    const fold = (x: string) => (p.keys === 'exact' ? x : foldKey(x));
    if (p.fields.some((f) => fold(f.path) === fold(subjectPath)))
      error('/subject/path', 'the subject path is mapped: the record would name its subject by a protected value');
  }
  if (p.validate && p.format !== 'json-schema')
    error('/validate', `validates records against their JSON Schema: only a json-schema pipeline has one (this one is ${p.format})`);
  if ('topics' in p.source && 'topic' in p.sink && p.source.topics.includes(p.sink.topic)) error('/sink/topic', 'the clean topic is one of the source topics');
  if ('topics' in p.source && p.source.topics.includes(p.deadLetterTopic)) error('/deadLetterTopic', 'the dead-letter topic is one of the source topics');
  return issues;
}
