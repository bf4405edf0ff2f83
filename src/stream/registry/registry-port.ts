/** The port the serdes and `veil config validate` talk to a schema registry through (confluent-registry.ts implements it). */

export type SchemaType = 'AVRO' | 'JSON' | 'PROTOBUF';

/** A subject's newest schema version, as the registry answers it. */
export interface LatestSchema {
  id: number;
  version: number;
  schema: string;
  schemaType: SchemaType;
}

/** Confluent-API schema registry: raw schema text by id, registration by subject. */
export interface SchemaRegistryPort {
  schemaById(id: number): Promise<string>;
  /** `schemaType` as the Confluent API names it (default AVRO) */
  register(subject: string, schema: string, schemaType?: SchemaType): Promise<number>;
  /** the subject's latest version; undefined when the registry holds no such subject (`veil config validate`) */
  latestVersion?(subject: string): Promise<LatestSchema | undefined>;
}
