/**
 * The record formats a source is sampled in and a pipeline reads (`format` of a pipeline,
 * src/stream/config/pipeline-config.ts): discover proposes pipelines in them, so the list lives
 * here, beside what discover shares with the stream (src/drift-guard), not in the stream adapter.
 */
export const RECORD_FORMATS = ['json', 'avro', 'json-schema', 'protobuf'] as const;
export type RecordFormat = (typeof RECORD_FORMATS)[number];
