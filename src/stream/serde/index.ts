/**
 * The serde front door of src/stream: a Serde reads a record's value in its format, protects the
 * mapped fields and writes it back. JSON and the decoded-value mappings load with this file; the
 * registry formats (Avro, Protobuf, JSON Schema) through `schemaFormats()`, on first use. Code
 * outside src/stream/serde imports only this file.
 */
export type { GuardPlan, RecordProtection, Serde } from './serde.ts';
export { jsonSerde } from './json/json-serde.ts';
export { protectJsonValues } from './json/json-splice.ts';
export type { SubjectRead } from './json/json-subject.ts';
export { mappings, protectRecord, type Mapping } from './field-mappings.ts';
export { firstUnallowed, planTags } from './schema-tags.ts';
export type { RegistryFormat } from './schema-check.ts';

export { sampleReader } from './sample-reader.ts';

/** The registry formats' serdes and schema checks (schema-formats.ts), loaded on first use. */
export const schemaFormats = () => import('./schema-formats.ts');
