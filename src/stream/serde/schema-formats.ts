/**
 * The serdes and schema checks of the registry formats (Avro, Protobuf, JSON Schema), loaded
 * together on first use through `schemaFormats()` (index.ts): avsc and protobufjs load only in a
 * process that reads such a format.
 */
export { avroSerde } from './avro/avro-serde.ts';
export { avroType } from './avro/avro-types.ts';
export { protobufSerde } from './protobuf/protobuf-serde.ts';
export { jsonSchemaSerde } from './json-schema/json-schema-serde.ts';
export { checkSchemaPaths } from './schema-check.ts';
