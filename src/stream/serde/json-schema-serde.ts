import type { SchemaRegistryPort } from '../ports.ts';
import { StreamError } from '../stream-error.ts';
import { memo } from '../memo.ts';
import { CleanJsonSchemaError, deriveCleanJsonSchema } from './json-schema-clean.ts';
import { protectJsonBytes, protectJsonValues } from './json-splice.ts';
import { compileValidator, SchemaCompileError, type RecordValidator } from './json-schema-validate.ts';
import type { RecordProtection, Serde } from './serde.ts';

export interface JsonSchemaSerdeOptions {
  registry: SchemaRegistryPort;
  /** the pipeline's record paths: their clean type is string */
  protectedPaths: readonly string[];
  /** paths match property names case-insensitively (the pipeline's `keys: insensitive`) */
  foldKeys?: boolean;
}

const HEADER = 5;

/**
 * JSON values in the Confluent wire format of JSON Schema: magic byte 0, the schema id (4 bytes,
 * big-endian), the JSON text. The text is protected like the `json` format — only the mapped
 * values' bytes change, every other byte stays — and goes out behind the id of the clean schema:
 * the raw one with every protected path's value a string (json-schema-clean.ts), registered as
 * schemaType JSON under `<cleanTopic>-value`. Clean schemas and their ids are cached per raw
 * schema id (and clean topic), so a steady stream costs no registry call and a new raw version
 * yields a new clean version. A schema that does not declare a mapped path (json-schema-clean.ts:
 * `properties` along the path, keys folded as the pipeline's `keys` says) is refused: its records
 * are dead-lettered SCHEMA_PATH_UNKNOWN with the path.
 *
 * With `protection.validate` the JSON text is first checked against the raw schema (ajv, the
 * dialect its `$schema` names; compiled once per schema id): a record that fails is
 * RECORD_INVALID, its message naming the instance path and keyword, never the value; a schema
 * that cannot be compiled dead-letters its records as RECORD_MALFORMED.
 */
export function jsonSchemaSerde(options: JsonSchemaSerdeOptions): Serde {
  const { registry, protectedPaths } = options;
  const foldKeys = options.foldKeys === true;
  const cleanTexts = new Map<number, Promise<{ text: string } | { error: string; unknownPath?: string }>>();
  const cleanIds = new Map<string, Promise<number>>();
  const validators = new Map<number, Promise<{ validate: RecordValidator } | { error: string }>>();

  const validatorOf = (id: number) => memo(validators, id, async () => {
    const raw = await registry.schemaById(id);
    try {
      return { validate: await compileValidator(raw) };
    } catch (e) {
      if (e instanceof SchemaCompileError) return { error: e.message };
      throw e;
    }
  });

  const cleanOf = (id: number) => memo(cleanTexts, id, async () => {
    const raw = await registry.schemaById(id);
    try {
      return { text: deriveCleanJsonSchema(raw, protectedPaths, { foldKeys }) };
    } catch (e) {
      if (e instanceof CleanJsonSchemaError) return { error: e.message, ...(e.unknownPath === undefined ? {} : { unknownPath: e.unknownPath }) };
      return { error: 'it is not JSON' };
    }
  });

  /** the clean id a value goes out with, once its schema fits and (when asked) it validates */
  async function prepare(bytes: Buffer, protection: RecordProtection, cleanTopic: string): Promise<number> {
    if (bytes.length < HEADER) throw new StreamError('RECORD_MALFORMED', 'the value is shorter than the wire-format header (magic byte, schema id)');
    if (bytes[0] !== 0) throw new StreamError('RECORD_MALFORMED', 'the value does not start with the wire-format magic byte 0');
    const rawId = bytes.readUInt32BE(1);
    const clean = await cleanOf(rawId);
    if ('error' in clean) {
      const path = clean.unknownPath;
      if (path !== undefined) throw new StreamError('SCHEMA_PATH_UNKNOWN', `schema ${rawId} does not declare the mapped path ${path}: the pipeline refuses its records`, { path, schema: rawId });
      throw new StreamError('RECORD_MALFORMED', `schema ${rawId} does not fit the pipeline's mapped paths: ${clean.error}`);
    }
    if (protection.validate) {
      const validator = await validatorOf(rawId);
      if ('error' in validator) throw new StreamError('RECORD_MALFORMED', `schema ${rawId} cannot be compiled to validate records: ${validator.error}`);
      validator.validate(bytes.subarray(HEADER));
    }
    return memo(cleanIds, `${rawId}\u0000${cleanTopic}`, () => registry.register(`${cleanTopic}-value`, clean.text, 'JSON'));
  }

  return {
    async protect(bytes: Buffer, protection: RecordProtection, cleanTopic: string): Promise<Buffer> {
      const cleanId = await prepare(bytes, protection, cleanTopic);
      return framed(cleanId, protectJsonBytes(bytes.subarray(HEADER), protection));
    },
    /** the JSON format's batch (protectJsonValues) once every value's schema is resolved */
    async protectMany(values: readonly Buffer[], protection: RecordProtection, cleanTopics: readonly string[], fields?: (string | undefined)[]): Promise<(Buffer | StreamError)[]> {
      const ids = await Promise.all(values.map((bytes, i) => prepare(bytes, protection, cleanTopics[i]!).catch((e: unknown) => {
        if (e instanceof StreamError && !e.retriable) return e;
        throw e;
      })));
      const ready = values.filter((_, i) => !(ids[i] instanceof StreamError));
      const readyFields: (string | undefined)[] = [];
      const bodies = ready.length ? protectJsonValues(ready.map((bytes) => bytes.subarray(HEADER)), protection, readyFields) : [];
      let next = 0;
      return ids.map((id, i) => {
        if (id instanceof StreamError) return id;
        if (fields !== undefined) fields[i] = readyFields[next];
        const body = bodies[next++]!;
        return body instanceof StreamError ? body : framed(id, body);
      });
    },
  };
}

function framed(cleanId: number, body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(HEADER + body.length);
  out[0] = 0;
  out.writeUInt32BE(cleanId, 1);
  body.copy(out, HEADER);
  return out;
}
