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
