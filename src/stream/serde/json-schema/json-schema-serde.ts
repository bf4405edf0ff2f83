import type { SchemaRegistryPort } from '../../registry/index.ts';
import { StreamError, unfitReason } from '../../stream-error.ts';
import { memo } from '../../memo.ts';
import { deriveCleanJsonSchema, jsonSchemaTaggedFields } from './json-schema-clean.ts';
import { planTags, tagMappings, tagRefusal, type SchemaTags } from '../schema-tags.ts';
import { protectJsonBytes, protectJsonValues } from '../json/json-splice.ts';
import { jsonSubjectReader, type SubjectRead } from '../json/json-subject.ts';
import { compileValidator, type RecordValidator } from './json-schema-validate.ts';
import type { RecordProtection, Serde } from '../serde.ts';

export interface JsonSchemaSerdeOptions {
  registry: SchemaRegistryPort;
  /** the pipeline's record paths: their clean type is string */
  protectedPaths: readonly string[];
  /** paths match property names case-insensitively (the pipeline's `keys: insensitive`) */
  foldKeys?: boolean;
  /** the Confluent tags the pipeline maps (`tags`): properties a schema tags so are protected too */
  tags?: readonly string[];
}

const NO_TAGS: SchemaTags = { mapped: [], unmapped: [] };

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
 * are dead-lettered SCHEMA_PATH_UNKNOWN with the path. A property a schema tags (Confluent's
 * `confluent:tags`) with a tag the pipeline maps is protected as that tag's class.property in the
 * schema's records, like a mapped path (its clean leaf a string, the tags kept); a tagged property
 * none of whose tags the pipeline maps refuses the schema's records (UNMAPPED_PERSONAL_DATA, kind
 * `tag:<TAG>`) unless the guard allows its path or is off.
 *
 * With `protection.validate` the JSON text is first checked against the raw schema (ajv, the
 * dialect its `$schema` names; compiled once per schema id): a record that fails is
 * RECORD_INVALID, its message naming the instance path and keyword, never the value; a schema
 * that cannot be compiled dead-letters its records as RECORD_MALFORMED.
 */
export function jsonSchemaSerde(options: JsonSchemaSerdeOptions): Serde {
  return new JsonSchemaRecords(options);
}

type CleanText = ({ text: string } | { error: string; unknownPath?: string }) & { tags: SchemaTags };
/** what a value goes out with once its schema fits and (when asked) it validates: the clean id and the protection of its schema */
type Prepared = { cleanId: number; protection: RecordProtection };

/** jsonSchemaSerde's state: clean schemas, validators, clean ids and tagged protections, each resolved once */
class JsonSchemaRecords implements Serde {
  private readonly registry: SchemaRegistryPort;
  private readonly protectedPaths: readonly string[];
  private readonly foldKeys: boolean;
  private readonly mappedTags: ReadonlySet<string>;
  private readonly cleanTexts = new Map<number, Promise<CleanText>>();
  // per protection and schema id: the protection with the schema's tagged properties mapped too
  private readonly tagged = new WeakMap<RecordProtection, Map<number, RecordProtection>>();
  private readonly cleanIds = new Map<string, Promise<number>>();
  private readonly validators = new Map<number, Promise<{ validate: RecordValidator } | { error: string }>>();

  constructor(options: JsonSchemaSerdeOptions) {
    this.registry = options.registry;
    this.protectedPaths = options.protectedPaths;
    this.foldKeys = options.foldKeys === true;
    this.mappedTags = new Set(options.tags ?? []);
  }

  async protect(bytes: Buffer, protection: RecordProtection, cleanTopic: string): Promise<Buffer> {
    const p = await this.prepare(bytes, protection, cleanTopic);
    return framed(p.cleanId, protectJsonBytes(bytes.subarray(HEADER), p.protection));
  }

  /**
   * The JSON format's batch (protectJsonValues) once every value's schema is resolved: one
   * batch per protection — the pipeline's, or a schema's with its tagged properties mapped too.
   */
  async protectMany(
    values: readonly Buffer[],
    protection: RecordProtection,
    cleanTopics: readonly string[],
    fields?: (string | undefined)[],
  ): Promise<(Buffer | StreamError)[]> {
    const prepared = await Promise.all(
      values.map((bytes, i) =>
        this.prepare(bytes, protection, cleanTopics[i]!).catch((e: unknown) => {
          if (e instanceof StreamError && !e.retriable) return e;
          throw e;
        }),
      ),
    );
    const out: (Buffer | StreamError)[] = prepared.map((p) => (p instanceof StreamError ? p : Buffer.alloc(0)));
    for (const [groupProtection, indexes] of byProtection(prepared)) {
      const groupFields: (string | undefined)[] = [];
      const bodies = protectJsonValues(
        indexes.map((i) => values[i]!.subarray(HEADER)),
        groupProtection,
        groupFields,
      );
      indexes.forEach((i, k) => {
        const body = bodies[k]!;
        if (fields !== undefined) fields[i] = groupFields[k];
        out[i] = body instanceof StreamError ? body : framed((prepared[i] as Prepared).cleanId, body);
      });
    }
    return out;
  }

  /** the JSON format's reader on the text behind the wire-format header; a value without that header is RECORD_MALFORMED, as its protect would be */
  subjectReader(path: string, foldKeys: boolean): (bytes: Buffer) => SubjectRead {
    const read = jsonSubjectReader(path, foldKeys);
    return (bytes) => (bytes.length < HEADER || bytes[0] !== 0 ? { code: 'RECORD_MALFORMED' } : read(bytes.subarray(HEADER)));
  }

  /** the clean id a value goes out with and the protection of its schema, once its schema fits and (when asked) it validates */
  private async prepare(bytes: Buffer, protection: RecordProtection, cleanTopic: string): Promise<Prepared> {
    if (bytes.length < HEADER) throw new StreamError('RECORD_MALFORMED', 'the value is shorter than the wire-format header (magic byte, schema id)');
    if (bytes[0] !== 0) throw new StreamError('RECORD_MALFORMED', 'the value does not start with the wire-format magic byte 0');
    const rawId = bytes.readUInt32BE(1);
    const clean = await this.cleanOf(rawId);
    if ('error' in clean) {
      const path = clean.unknownPath;
      if (path !== undefined)
        throw new StreamError('SCHEMA_PATH_UNKNOWN', `schema ${rawId} does not declare the mapped path ${path}: the pipeline refuses its records`, {
          path,
          schema: rawId,
        });
      throw new StreamError('RECORD_MALFORMED', `schema ${rawId} does not fit the pipeline's mapped paths: ${clean.error}`);
    }
    const refusal = tagRefusal(clean.tags.unmapped, protection, String(rawId), this.foldKeys);
    if (refusal) throw refusal;
    if (protection.validate) {
      const validator = await this.validatorOf(rawId);
      if ('error' in validator) throw new StreamError('RECORD_MALFORMED', `schema ${rawId} cannot be compiled to validate records: ${validator.error}`);
      validator.validate(bytes.subarray(HEADER));
    }
    const cleanId = await memo(this.cleanIds, `${rawId}\u0000${cleanTopic}`, () => this.registry.register(`${cleanTopic}-value`, clean.text, 'JSON'));
    return { cleanId, protection: this.protectionOf(protection, rawId, clean.tags) };
  }

  private validatorOf(id: number): Promise<{ validate: RecordValidator } | { error: string }> {
    return memo(this.validators, id, async () => {
      const raw = await this.registry.schemaById(id);
      try {
        return { validate: await compileValidator(raw) };
      } catch (e) {
        const unfit = unfitReason(e);
        if (unfit) return { error: unfit.error };
        throw e;
      }
    });
  }

  private cleanOf(id: number): Promise<CleanText> {
    return memo(this.cleanTexts, id, async () => {
      const raw = await this.registry.schemaById(id);
      let tags = NO_TAGS;
      try {
        tags = planTags(jsonSchemaTaggedFields(raw), this.protectedPaths, this.mappedTags, this.foldKeys);
        return { text: deriveCleanJsonSchema(raw, [...this.protectedPaths, ...tags.mapped.map((t) => t.path)], { foldKeys: this.foldKeys }), tags };
      } catch (e) {
        return { ...(unfitReason(e) ?? { error: 'it is not JSON' }), tags };
      }
    });
  }

  /** the protection of a schema's records: the pipeline's, with the properties the schema tags with a mapped tag */
  private protectionOf(protection: RecordProtection, id: number, tags: SchemaTags): RecordProtection {
    if (tags.mapped.length === 0) return protection;
    let byId = this.tagged.get(protection);
    if (byId === undefined) this.tagged.set(protection, (byId = new Map()));
    let p = byId.get(id);
    if (p === undefined) byId.set(id, (p = { ...protection, maps: [...protection.maps, ...tagMappings(tags.mapped, protection)] }));
    return p;
  }
}

/** the indexes of the prepared values by the protection they share */
function byProtection(prepared: readonly (Prepared | StreamError)[]): Map<RecordProtection, number[]> {
  const groups = new Map<RecordProtection, number[]>();
  prepared.forEach((p, i) => {
    if (p instanceof StreamError) return;
    const group = groups.get(p.protection);
    if (group === undefined) groups.set(p.protection, [i]);
    else group.push(i);
  });
  return groups;
}

function framed(cleanId: number, body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(HEADER + body.length);
  out[0] = 0;
  out.writeUInt32BE(cleanId, 1);
  body.copy(out, HEADER);
  return out;
}
