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
