import type { Chain } from '../../engine/index.ts';
import { allowedPath } from '../../drift-guard/index.ts';
import { foldKey } from '../../json-bytes/paths.ts';
import { compilePath } from './record-path.ts';
import type { Mapping } from './field-mappings.ts';
import { schemaUnfit, StreamError } from '../stream-error.ts';
import type { RecordProtection } from './serde.ts';

/**
 * A field the writer's schema tags (Confluent's `confluent:tags` on an Avro field or a JSON
 * Schema property, `(confluent.field_meta).tags` on a Protobuf field): where it is and its tags.
 */
export interface TaggedField {
  /**
   * the pipeline path of its values (`cards[].number`; `emails[]` for a tagged array of scalars);
   * where no pipeline path can reach it (inside a map, under a union of records or a combinator,
   * through a recursive type) a path with `*` or the branch's name, and `reachable` false
   */
  path: string;
  tags: readonly string[];
  reachable: boolean;
}

/** What a pipeline makes of one schema's tagged fields. */
export interface SchemaTags {
  /** fields tagged with a tag the pipeline maps (the first such tag of each): protected like mapped paths */
  mapped: { path: string; tag: string }[];
  /** fields none of whose tags the pipeline maps: unmapped personal data (kind `tag:<first tag>`) */
  unmapped: { path: string; tag: string }[];
}

/**
 * Splits a schema's tagged fields for a pipeline: a field the pipeline maps already (`fields`,
 * keys folded when `fold`) is left to its mapping; one tagged with a tag the pipeline maps is
 * protected as that tag (the first of its tags the pipeline maps), which needs a pipeline path —
 * else the schema is refused (schemaUnfit, RECORD_MALFORMED); any other is unmapped.
 */
export function planTags(tagged: readonly TaggedField[], fieldPaths: readonly string[], mappedTags: ReadonlySet<string>, fold: boolean): SchemaTags {
  const norm = (p: string) => (fold ? foldKey(p) : p);
  const known = new Set(fieldPaths.map(norm));
  const out: SchemaTags = { mapped: [], unmapped: [] };
  for (const f of tagged) {
    if (known.has(norm(f.path))) continue;
    const tag = f.tags.find((t) => mappedTags.has(t));
    if (tag === undefined) {
      out.unmapped.push({ path: f.path, tag: f.tags[0]! });
      continue;
    }
    if (!f.reachable)
      throw schemaUnfit(
        `${f.path} is tagged ${tag}, which the pipeline maps, where no record path reaches it (a map, a union of records, a combinator or a recursive type)`,
      );
    known.add(norm(f.path));
    out.mapped.push({ path: f.path, tag });
  }
  return out;
}

/** The tag mappings as Mappings whose transform is the tag's chain. */
export function tagMappings(mapped: SchemaTags['mapped'], protection: RecordProtection): Mapping[] {
  return mapped.map(({ path, tag }) => {
    const transform: Chain | undefined = protection.tags?.get(tag);
    // the serde's tags and the protection's come from the same pipeline: a gap is a bug, never a pass-through
    if (transform === undefined) throw new Error(`serde: no chain for the mapped tag ${tag}`);
    return { path, compiled: compilePath(path), transform };
  });
}

// per protection and schema: the refusal of its unmapped tagged fields, if any
const refusals = new WeakMap<RecordProtection, Map<string, StreamError | null>>();

/**
 * The dead letter every record of a schema gets when the schema tags a field the pipeline does
 * not map and the unmapped guard does not allow (UNMAPPED_PERSONAL_DATA, the field's path, kind
 * `tag:<TAG>`): the schema says it holds personal data, and nothing protects it. None with
 * `unmapped: pass` (no guard). `key` names the schema (computed once per protection and key).
 */
export function tagRefusal(unmapped: SchemaTags['unmapped'], protection: RecordProtection, key: string, fold: boolean): StreamError | undefined {
  const guard = protection.guard;
  if (guard === undefined || unmapped.length === 0) return undefined;
  let byKey = refusals.get(protection);
  if (byKey === undefined) refusals.set(protection, (byKey = new Map()));
  let refusal = byKey.get(key);
  if (refusal === undefined) {
    const f = firstUnallowed(unmapped, guard.allow, fold);
    refusal =
      f === undefined
        ? null
        : new StreamError(
            'UNMAPPED_PERSONAL_DATA',
            `the writer's schema tags ${f.path} ${f.tag} and the pipeline maps no tag of it (map the tag under tags, map the path, or allow it)`,
            { path: f.path, kind: `tag:${f.tag}` },
          );
    byKey.set(key, refusal);
  }
  return refusal ?? undefined;
}

/** the first unmapped tagged field no allowed path covers */
export function firstUnallowed(unmapped: SchemaTags['unmapped'], allow: readonly string[], fold: boolean): SchemaTags['unmapped'][number] | undefined {
  return unmapped.find((u) => !allowed(u.path, allow, fold));
}

/** whether an allowed path (it and everything under it) covers `path` */
function allowed(path: string, allow: readonly string[], fold: boolean): boolean {
  const norm = (p: string) => allowedPath(fold ? foldKey(p) : p);
  const steps = norm(path);
  return allow.some((a) => {
    const prefix = norm(a);
    return prefix.length <= steps.length && prefix.every((s, i) => s === steps[i]);
  });
}
