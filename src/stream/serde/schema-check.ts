import { unfitReason } from '../stream-error.ts';
import { avroTaggedFields, deriveCleanSchema } from './avro/avro-clean-schema.ts';
import { deriveCleanJsonSchema, jsonSchemaTaggedFields } from './json-schema/json-schema-clean.ts';
import { compilePlan } from './protobuf/protobuf-plan.ts';
import { parseProtoSchema, protoTaggedFields, type ProtoMessage, type ProtoSchema } from './protobuf/protobuf-schema.ts';
import type { TaggedField } from './schema-tags.ts';

/** A mapped path a writer's schema does not take: absent from it (`unknown`), or at odds with its shape. */
export interface SchemaPathIssue {
  path: string;
  unknown: boolean;
  message: string;
}

export interface SchemaCheck {
  /** the schema cannot be read at all */
  error?: string;
  /** Protobuf: the message type the paths were checked against (the top-level one most of them fit) */
  message?: string;
  issues: SchemaPathIssue[];
  /** the fields the schema tags (Confluent tags) */
  tagged?: TaggedField[];
}

export type RegistryFormat = 'avro' | 'json-schema' | 'protobuf';

/**
 * How a pipeline's mapped paths fit one writer's schema, path by path, as the format's serde
 * would judge them (`veil config validate` against the registry's latest schema): a path the
 * schema lacks would dead-letter every record of that version SCHEMA_PATH_UNKNOWN, a path at odds
 * with its shape RECORD_MALFORMED. Avro and Protobuf field names match exactly; JSON Schema
 * properties fold case with `foldKeys`. A Protobuf schema's record type is not in the schema: the
 * paths are checked against the top-level message most of them fit.
 */
export function checkSchemaPaths(format: RegistryFormat, schemaText: string, paths: readonly string[], options: { foldKeys?: boolean } = {}): SchemaCheck {
  if (format === 'protobuf') return checkProtobuf(schemaText, paths);
  const derive = (list: readonly string[]) => (format === 'avro' ? deriveCleanSchema(schemaText, list) : deriveCleanJsonSchema(schemaText, list, options));
  try {
    derive([]);
  } catch (e) {
    return { error: `the schema cannot be read (${e instanceof SyntaxError ? 'not JSON' : (e as Error).message})`, issues: [] };
  }
  const issues: SchemaPathIssue[] = [];
  for (const path of paths) {
    try {
      derive([path]);
    } catch (e) {
      issues.push(pathIssue(path, e));
    }
  }
  return { issues, tagged: format === 'avro' ? avroTaggedFields(schemaText) : jsonSchemaTaggedFields(schemaText) };
}

function checkProtobuf(schemaText: string, paths: readonly string[]): SchemaCheck {
  let schema: ProtoSchema;
  try {
    schema = parseProtoSchema(schemaText);
  } catch (e) {
    return { error: `the schema cannot be read (${unfitReason(e)?.error ?? 'it does not parse'})`, issues: [] };
  }
  const candidates = schema.topLevel.map((name) => schema.messages.get(name)!).map((message) => ({ message, issues: protoIssues(schema, message, paths) }));
  if (candidates.length === 0) return { error: 'the schema has no message', issues: [] };
  const best = candidates.reduce((a, b) => (b.issues.length < a.issues.length ? b : a));
  return { message: best.message.fullName, issues: best.issues, tagged: protoTaggedFields(schema, best.message) };
}

function protoIssues(schema: ProtoSchema, message: ProtoMessage, paths: readonly string[]): SchemaPathIssue[] {
  const issues: SchemaPathIssue[] = [];
  for (const path of paths) {
    try {
      compilePlan(schema, message, [path]);
    } catch (e) {
      issues.push(pathIssue(path, e));
    }
  }
  return issues;
}

/** a path the schema refuses; any other error is a bug, thrown on */
function pathIssue(path: string, e: unknown): SchemaPathIssue {
  const unfit = unfitReason(e);
  if (!unfit) throw e;
  return { path, unknown: unfit.unknownPath !== undefined, message: unfit.error };
}
