import type { ConfigIssue } from '../../engine/index.ts';
import { unmappedPolicy, type PipelineConfig } from '../config/index.ts';
import type { SchemaRegistryPort, SchemaType } from '../registry/index.ts';
import { firstUnallowed, planTags, schemaFormats, type RegistryFormat } from '../serde/index.ts';
import { unfitReason } from '../stream-error.ts';
import { StreamError } from '../stream-error.ts';

const SCHEMA_TYPE: Record<RegistryFormat, SchemaType> = { avro: 'AVRO', 'json-schema': 'JSON', protobuf: 'PROTOBUF' };

/**
 * `veil config validate` with a schema registry: each avro, json-schema and protobuf pipeline's
 * mapped paths against the latest schema of `<source topic>-value` (topics named in `source.topics`;
 * a `pattern` source names no subject and is not checked). A path that schema lacks is an error
 * at the path's pointer — the pipeline would dead-letter every record of that version
 * SCHEMA_PATH_UNKNOWN — and so is one at odds with its shape (RECORD_MALFORMED). A subject the
 * registry does not hold yet is a warning; a registry that cannot be reached is one warning and
 * nothing more is checked. Pointers are from the file's root.
 */
export async function registrySchemaIssues(pipelines: Readonly<Record<string, PipelineConfig>>, registry: SchemaRegistryPort): Promise<ConfigIssue[]> {
  const issues: ConfigIssue[] = [];
  if (!registry.latestVersion) return issues;
  for (const [name, p] of Object.entries(pipelines)) {
    if (p.format === 'json' || !('topics' in p.source)) continue;
    const at = `/pipelines/${escape(name)}`;
    for (const [t, topic] of p.source.topics.entries()) {
      const subject = `${topic}-value`;
      let latest;
      try {
        latest = await registry.latestVersion(subject);
      } catch (e) {
        if (e instanceof StreamError && e.code !== 'REGISTRY_UNAVAILABLE') {
          issues.push({
            severity: 'warning',
            pointer: `${at}/source/topics/${t}`,
            message: `the registry did not answer for subject ${subject} (${e.message}): mappings not checked against it`,
          });
          continue;
        }
        issues.push({
          severity: 'warning',
          pointer: '/pipelines',
          message: `the schema registry cannot be reached (${e instanceof Error ? e.message : 'failed'}): mappings not checked against the writers' schemas`,
        });
        return issues;
      }
      if (latest === undefined) {
        issues.push({
          severity: 'warning',
          pointer: `${at}/source/topics/${t}`,
          message: `the registry holds no subject ${subject} yet: mappings not checked against it`,
        });
        continue;
      }
      const which = `the latest schema of subject ${subject} (id ${latest.id}, version ${latest.version})`;
      if (latest.schemaType !== SCHEMA_TYPE[p.format]) {
        issues.push({
          severity: 'error',
          pointer: `${at}/format`,
          message: `${which} is ${latest.schemaType}; a ${p.format} pipeline reads ${SCHEMA_TYPE[p.format]}`,
        });
        continue;
      }
      const check = (await schemaFormats()).checkSchemaPaths(
        p.format,
        latest.schema,
        p.fields.map((f) => f.path),
        { foldKeys: p.keys !== 'exact' },
      );
      if (check.error) {
        issues.push({ severity: 'error', pointer: `${at}/source/topics/${t}`, message: `${which}: ${check.error}` });
        continue;
      }
      const of = check.message ? `${which}, message ${check.message},` : which;
      issues.push(...tagIssues(p, at, of, check.tagged ?? []));
      for (const issue of check.issues) {
        const i = p.fields.findIndex((f) => f.path === issue.path);
        issues.push({
          severity: 'error',
          pointer: `${at}/fields/${i}/path`,
          message: issue.unknown
            ? `${of} has no field at ${issue.path}: the pipeline would dead-letter its records SCHEMA_PATH_UNKNOWN`
            : `${of} does not fit ${issue.path} (${issue.message}): the pipeline would dead-letter its records RECORD_MALFORMED`,
        });
      }
    }
  }
  return issues;
}

/**
 * The schema's Confluent tags against the pipeline's `tags`: a mapped tag where no path reaches it
 * (RECORD_MALFORMED), or a tagged field none of whose tags the pipeline maps and the guard does
 * not allow (every record UNMAPPED_PERSONAL_DATA), is an error.
 */
function tagIssues(p: PipelineConfig, at: string, of: string, tagged: Parameters<typeof planTags>[0]): ConfigIssue[] {
  const fold = p.keys !== 'exact';
  const pointer = p.tags ? `${at}/tags` : at;
  try {
    const plan = planTags(
      tagged,
      p.fields.map((f) => f.path),
      new Set(Object.keys(p.tags ?? {})),
      fold,
    );
    const guard = unmappedPolicy(p);
    // report mode passes such records (reported): no error, as with pass
    const f = guard.action === 'pass' || guard.action === 'report' ? undefined : firstUnallowed(plan.unmapped, guard.allow, fold);
    return f === undefined
      ? []
      : [
          {
            severity: 'error',
            pointer,
            message: `${of} tags ${f.path} ${f.tag}, and the pipeline maps no tag of it: it would dead-letter its records UNMAPPED_PERSONAL_DATA (map the tag under tags, map the path, or allow it)`,
          },
        ];
  } catch (e) {
    const unfit = unfitReason(e);
    if (!unfit) throw e;
    return [{ severity: 'error', pointer, message: `${of}: ${unfit.error}: the pipeline would dead-letter its records RECORD_MALFORMED` }];
  }
}

function escape(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}
