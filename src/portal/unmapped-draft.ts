import { stringify } from 'yaml';
import { GUARD_KINDS, type GuardKind } from '../drift-guard/index.ts';
import { mergePipelineFields } from '../discover/index.ts';
import { classNameFor, protectionOf } from '../discover/index.ts';
import { ROLE, type CompiledConfig } from '../engine/index.ts';
import { foldKey } from '../json-bytes/paths.ts';
import { OTHER_PATH } from '../observability/index.ts';
import type { PipelineView } from './config-port.ts';
import { PortalFault } from './errors.ts';
import type { UnmappedFinding } from './pipeline-metrics.ts';

/**
 * A record path as a pipeline's `fields` takes it (src/stream's pipeline schema, which the portal
 * does not import): names joined by dots, `[]` after an array (`profile.contacts[].email`).
 */
export const RECORD_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\[\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[\])?)*$/;
/** the longest path a draft takes from the page (the scrape keeps labels up to 1,024 characters) */
const PATH_MAX = 1024;
/** the most findings one draft form carries: the rows the page keeps per pipeline (FINDINGS_KEPT) */
export const DRAFT_FINDINGS_MAX = 200;

/** What the page and the draft do with one finding: map its path as a field, or why not. */
export type FindingPlan = { map: true; field: string } | { map: false; why: 'key' | 'other' | 'tag' | 'path' | 'kind' | 'mapped' | 'repeated'; note: string };

/**
 * The class a pipeline's new fields join: the one most of its mapped fields (and its record key)
 * belong to, the first such on a tie, so the pipeline's identity likely holds grants on it already;
 * without any, the class Discovery names after the source topic (`raw.customers` → `Customer`).
 */
export function classOf(pipeline: Pick<PipelineView, 'fields' | 'key' | 'source'>): string {
  const counts = new Map<string, number>();
  for (const ref of [...pipeline.fields.map((f) => f.field), ...(pipeline.key ? [pipeline.key.field] : [])]) {
    const cls = ref.slice(0, ref.indexOf('.'));
    counts.set(cls, (counts.get(cls) ?? 0) + 1);
  }
  let best = '';
  for (const [cls, n] of counts) if (best === '' || n > counts.get(best)!) best = cls;
  return best || classNameFor('topics' in pipeline.source ? pipeline.source.topics[0] : undefined);
}

const isGuardKind = (kind: string): kind is GuardKind => (GUARD_KINDS as readonly string[]).includes(kind);

/**
 * What each finding becomes (in order; the page and the draft use this one rule): a field
 * `Class.property` (the pipeline's class, the property discover's proposal gives the kind), or
 * skipped: data in an object key (`*`: no path can name it), the processors' `(other)` bucket, a
 * tag the pipeline does not map (fixed under `tags:`), text that is no pipeline path or kind
 * (label values are untrusted), a path the pipeline maps already (keys folded as it folds them),
 * or a path listed above (with another kind, or spelled otherwise where keys fold): a path maps to one field.
 */
export function planFindings(
  findings: readonly Pick<UnmappedFinding, 'path' | 'kind'>[],
  pipeline: Pick<PipelineView, 'fields' | 'key' | 'keys' | 'source'>,
): FindingPlan[] {
  const fold = (path: string) => (pipeline.keys === 'exact' ? path : foldKey(path));
  const mapped = new Set(pipeline.fields.map((f) => fold(f.path)));
  const drafted = new Map<string, string>();
  const cls = classOf(pipeline);
  return findings.map((f): FindingPlan => {
    if (f.kind.startsWith('tag:')) return { map: false, why: 'tag', note: 'a field the schema tags: map the tag under tags, not the path' };
    if (f.path === OTHER_PATH) return { map: false, why: 'other', note: 'paths beyond the 100 a processor names: its log names each one' };
    if (f.path.split(/[.[\]]/).includes('*')) return { map: false, why: 'key', note: 'the data sits in an object key: no path can name it' };
    if (f.path.length > PATH_MAX || !RECORD_PATH.test(f.path)) return { map: false, why: 'path', note: 'not a pipeline path' };
    if (!isGuardKind(f.kind)) return { map: false, why: 'kind', note: 'not a kind veil detects' };
    const key = fold(f.path);
    if (mapped.has(key)) return { map: false, why: 'mapped', note: 'mapped in the active version' };
    const earlier = drafted.get(key);
    if (earlier !== undefined) return { map: false, why: 'repeated', note: `the path is listed above: mapped once, as ${earlier}` };
    const field = `${cls}.${protectionOf(f.kind).property}`;
    drafted.set(key, field);
    return { map: true, field };
  });
}

const records = (n: number) => `${n} record${n === 1 ? '' : 's'}`;

/** A finding as the draft form carries it: path, kind and count, tab-separated. */
export function findingField(f: UnmappedFinding): string {
  return [f.path, f.kind, Math.max(1, Math.min(Number.MAX_SAFE_INTEGER, Math.round(f.records)))].join('\t');
}

/**
 * A finding from the draft form, checked again (the form is the browser's): a pipeline path, a
 * kind veil detects and a positive whole count, or undefined.
 */
export function findingOfField(text: string): UnmappedFinding | undefined {
  const parts = text.split('\t');
  if (parts.length !== 3) return undefined;
  const [path, kind, records] = parts as [string, string, string];
  if (path.length > PATH_MAX || !RECORD_PATH.test(path) || !isGuardKind(kind) || !/^[1-9][0-9]{0,15}$/.test(records)) return undefined;
  const n = Number(records);
  return Number.isSafeInteger(n) ? { path, kind, records: n } : undefined;
}

/** `*`, `Class.*` or `Class.property`: the engine's grant patterns */
const patternMatches = (pattern: string, cls: string, prop: string) => pattern === '*' || pattern === `${cls}.*` || pattern === `${cls}.${prop}`;

/**
 * The grant a pipeline's identity needs to protect `fields`, or undefined when it holds one for
 * each: the rights contexts its evidences match (as the engine matches them: every evidence of a
 * context among the pipeline's, a Role only if the pipeline holds it) are searched for Protect on
 * each field; the fields none grants go to the first of them. No context matching: undefined (the
 * pipeline binds nothing as it is; a grant is not this page's to invent).
 */
export function missingGrant(
  engine: CompiledConfig,
  pipeline: Pick<PipelineView, 'roles' | 'rightsEvidences'>,
  fields: readonly string[],
): { context: string; fields: string[] } | undefined {
  const held = new Set(pipeline.roles ?? []);
  const given = Object.entries(pipeline.rightsEvidences ?? {});
  const matched = engine.rightsContexts.filter((c) =>
    c.evidences.every(([n, v]) => given.some(([gn, gv]) => gn === n && gv === v && (n !== ROLE || held.has(v)))),
  );
  if (matched.length === 0) return undefined;
  const lacking = [...new Set(fields)].filter((ref) => {
    const [cls, prop] = ref.split('.') as [string, string];
    return !matched.some((c) => c.grants.some((g) => g.actions.has('Protect') && g.fields.some((p) => patternMatches(p, cls, prop))));
  });
  return lacking.length ? { context: matched[0]!.name, fields: lacking } : undefined;
}

export interface FindingsDraft {
  /** the configuration text of the new draft */
  text: string;
  /** the findings whose paths it maps, with their field */
  mapped: (UnmappedFinding & { field: string })[];
  /** the findings it leaves out, and why */
  skipped: (UnmappedFinding & { note: string })[];
  /** the Protect grant it adds for the pipeline's identity, if one was lacking */
  grant?: { context: string; fields: string[] };
}

/**
 * A draft from the active configuration in which pipeline `name` maps the paths of `findings`:
 * its `fields` gains `{ path, field }` for each finding planFindings maps (each with a comment
 * naming the kind and count), the class gains the properties it lacks with the sequence and key
 * discover's proposal gives each kind (keys, sequences kept when present), and the pipeline's
 * rights context gains Protect on the new fields when it lacks it. Throws PortalFault NOTHING_TO_MAP when
 * no finding is left to map, an Error when the pipeline is not in the active version or its text
 * has no `fields` list to add to (an alias, say).
 */
export function buildFindingsDraft(
  activeText: string,
  active: { engine: CompiledConfig; pipelines: Readonly<Record<string, PipelineView>> },
  name: string,
  findings: readonly UnmappedFinding[],
): FindingsDraft {
  const pipeline = Object.hasOwn(active.pipelines, name) ? active.pipelines[name] : undefined;
  if (!pipeline) throw new Error(`the active version has no pipeline ${name}`);
  const plans = planFindings(findings, pipeline);
  const mapped: FindingsDraft['mapped'] = [];
  const skipped: FindingsDraft['skipped'] = [];
  findings.forEach((f, i) => {
    const plan = plans[i]!;
    if (plan.map) mapped.push({ ...f, field: plan.field });
    else skipped.push({ ...f, note: plan.note });
  });
  if (mapped.length === 0) throw new PortalFault('NOTHING_TO_MAP', 'nothing to map: every path is mapped in the active version or cannot be mapped');
  const keys: Record<string, unknown> = {};
  const sequences: Record<string, unknown> = {};
  const properties: Record<string, { protect: string; description: string }> = {};
  const cls = classOf(pipeline);
  const has = active.engine.classes.get(cls);
  for (const f of mapped) {
    const plan = protectionOf(f.kind as GuardKind);
    // a property the class has is kept as it is (so is its sequence): nothing to add for it
    if (has?.has(plan.property)) continue;
    if (!active.engine.sequences.has(plan.sequence)) {
      keys[plan.key] = plan.keyConfig;
      sequences[plan.sequence] = { steps: plan.steps };
    }
    const found = `${f.path} (${records(f.records)} dead-lettered)`;
    const present = properties[plan.property];
    properties[plan.property] = present
      ? { ...present, description: `${present.description}; ${found}` }
      : { protect: plan.sequence, description: `${f.kind} the unmapped guard of pipeline ${name} found at ${found}` };
  }
  const grant = missingGrant(
    active.engine,
    pipeline,
    mapped.map((f) => f.field),
  );
  const text = mergePipelineFields(activeText, stringify({ keys, sequences, classes: { [cls]: { properties } } }), {
    pipeline: name,
    fields: mapped.map((f) => ({ path: f.path, field: f.field, comment: `unmapped guard: ${f.kind}, ${records(f.records)} dead-lettered` })),
    ...(grant ? { grant } : {}),
  });
  return { text, mapped, skipped, ...(grant ? { grant } : {}) };
}
