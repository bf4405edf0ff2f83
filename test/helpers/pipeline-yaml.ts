/** One JSON protect pipeline of the example configuration (Customer.email), as an entry under `pipelines:`. */
export function pipelineYaml(name = 'customers', extraLines = ''): string {
  return `  ${name}:
    source: { topics: [raw.${name}] }
    sink: { topic: clean.${name} }
    deadLetterTopic: dlq.${name}
    format: json
    fields:
      - { path: email, field: Customer.email }
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
${extraLines}`;
}

/** A JSON protect pipeline of Customer.email on the given topics (topicsFor's), its group the test's own; `extraLines` after its fields. */
export function topicsPipelineYaml(name: string, t: { id: string; raw: string; clean: string; dlq: string }, extraLines = ''): string {
  return `  ${name}:
    source: { topics: [${t.raw}] }
    sink: { topic: ${t.clean} }
    deadLetterTopic: ${t.dlq}
    format: json
    groupId: veil-test-${t.id}
    fields: [ { path: email, field: Customer.email } ]
${extraLines}    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
`;
}

export interface PipelineEntry {
  /** the pipeline's name under `pipelines:` (default p) */
  name?: string;
  raw: string;
  clean: string;
  dlq: string;
  /** default json */
  format?: string;
  /** the field mappings as YAML flow maps (default: email as Customer.email) */
  fields?: readonly string[];
  /** more settings, as written (`key: { field: Customer.email }`, `groupId: g`, `missing: dead-letter`) */
  settings?: readonly string[];
  /** the role it protects under (default ingest: the example configuration's) */
  role?: string;
}

/** One protect pipeline as an entry under `pipelines:`, every setting named, its mapping and role the example configuration's unless given. */
export function pipelineEntry(p: PipelineEntry): string {
  const role = p.role ?? 'ingest';
  return `  ${p.name ?? 'p'}:
    source: { topics: [${p.raw}] }
    sink: { topic: ${p.clean} }
    deadLetterTopic: ${p.dlq}
    format: ${p.format ?? 'json'}
    fields: [ ${(p.fields ?? ['{ path: email, field: Customer.email }']).join(', ')} ]
${(p.settings ?? []).map((s) => `    ${s}\n`).join('')}    roles: [${role}]
    rightsEvidences: { Role: ${role} }
    processingEvidences: { Action: Protect }
`;
}
