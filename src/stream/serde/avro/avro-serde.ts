import type avro from 'avsc';
import type { SchemaRegistryPort } from '../../registry/index.ts';
import { StreamError, unfitReason } from '../../stream-error.ts';
import { avroTaggedFields, avscSchema, deriveCleanSchema, unknownAvroPaths } from './avro-clean-schema.ts';
import { avroType } from './avro-types.ts';
import type { RecordProtection, Serde } from '../serde.ts';
import { protectRecord, type Mapping } from '../field-mappings.ts';
import { planTags, tagMappings, tagRefusal, type SchemaTags } from '../schema-tags.ts';
import { memo } from '../../memo.ts';
import { guardFor, applyGuard } from '../decoded-drift-guard.ts';

export interface AvroSerdeOptions {
  registry: SchemaRegistryPort;
  /** the pipeline's record paths (`address.postcode`, `cards[].number`): their clean type is string */
  protectedPaths: readonly string[];
  /** the Confluent tags the pipeline maps (`tags`): fields a schema tags so are protected too, their clean type string */
  tags?: readonly string[];
}

/** what a raw schema id resolves to, once: its reader, its clean schema (or why there is none), and its tagged fields */
interface Writer {
  type: avro.Type;
  clean: { text: string; type: avro.Type } | { error: string; unknownPath?: string };
  tags: SchemaTags;
}

const NO_TAGS: SchemaTags = { mapped: [], unmapped: [] };

const HEADER = 5;

/**
 * Avro values in the Confluent wire format: magic byte 0, the schema id (4 bytes, big-endian),
 * the Avro binary. Decoding reads with the writer's schema from the registry; unions decode to
 * plain values where unambiguous and longs beyond 2^53 to bigints (see avro-types.ts). Encoding
 * writes with the clean schema — the raw schema with every protected path's type made string
 * (avro-clean-schema.ts) — registered under `<cleanTopic>-value`. Schemas, clean schemas and their
 * ids are cached per raw schema id (and clean topic), so a steady stream costs no registry call
 * and a new raw schema version yields a new clean version.
 *
 * Every mapped path must name a field of the writer's schema (field names match exactly): a
 * schema version without one (a typo, a renamed field, an older version) is refused for the
 * pipeline — its records are dead-lettered SCHEMA_PATH_UNKNOWN, naming the first such path in
 * mapping order — rather than passed with the field's data, if any, in clear. `missing` decides
 * only for a value absent from a record whose schema has the field. A path the schema's shape
 * contradicts (it walks into a string, a map, a union of records, or ends at a record or bytes)
 * fails the schema's records with RECORD_MALFORMED at decode, before anything is protected.
 *
 * With the unmapped guard (`protection.guard`) every decoded value at a path no mapping names is
 * checked (ObjectGuard; maps show as arrays of `{key, value}` entries, `attributes[].value`): a
 * finding dead-letters the record (UNMAPPED_PERSONAL_DATA, path and kind), or with action
 * `protect` a string of a protected kind is protected in place — the field is a string in the
 * clean schema already — and named in the record's protected paths. A number found is
 * dead-lettered even then: the schema fixes its type (map the field to protect it).
 *
 * Confluent tags (`confluent:tags` on a field): a field a schema tags with a tag the pipeline maps
 * (`tags`) is protected as that tag's class.property in that schema's records, like a mapped path
 * (its clean type string, the tags kept); a tagged field none of whose tags the pipeline maps
 * refuses every record of the schema (UNMAPPED_PERSONAL_DATA, kind `tag:<TAG>`) unless the guard
 * allows its path or is off.
 */
/** The Avro serde, with its decode and encode halves open to tests and tools. */
export interface AvroSerde extends Serde {
  decode(bytes: Buffer): Promise<{ value: unknown; schemaId: number }>;
  encode(decoded: { value: unknown; schemaId: number }, cleanTopic: string): Promise<Buffer>;
}

export function avroSerde(options: AvroSerdeOptions): AvroSerde {
  return new AvroRecords(options);
}

/** avroSerde's state: the writers' schemas and clean schemas, the clean ids, the tagged mappings, each resolved once */
class AvroRecords implements AvroSerde {
  private readonly registry: SchemaRegistryPort;
  private readonly protectedPaths: readonly string[];
  private readonly mappedTags: ReadonlySet<string>;
  private readonly writers = new Map<number, Promise<Writer>>();
  private readonly cleanIds = new Map<string, Promise<number>>();
  // per protection and schema id: the pipeline's mappings plus the schema's tagged fields
  private readonly schemaMaps = new WeakMap<RecordProtection, Map<number, readonly Mapping[]>>();

  constructor(options: AvroSerdeOptions) {
    this.registry = options.registry;
    this.protectedPaths = options.protectedPaths;
    this.mappedTags = new Set(options.tags ?? []);
  }

  private writer(id: number): Promise<Writer> {
    return memo(this.writers, id, async () => resolveWriter(id, await this.registry.schemaById(id), this.protectedPaths, this.mappedTags));
  }

  async decode(bytes: Buffer): Promise<{ value: unknown; schemaId: number }> {
    if (bytes.length < HEADER) throw new StreamError('RECORD_MALFORMED', 'the value is shorter than the Avro wire-format header (magic byte, schema id)');
    if (bytes[0] !== 0) throw new StreamError('RECORD_MALFORMED', 'the value does not start with the Avro wire-format magic byte 0');
    const schemaId = bytes.readUInt32BE(1);
    const w = await this.writer(schemaId);
    cleanSchema(w, schemaId);
    let value: unknown;
    try {
      value = w.type.fromBuffer(bytes.subarray(HEADER));
    } catch {
      // no cause: avsc's messages may quote the bytes
      throw new StreamError('RECORD_MALFORMED', `the value does not decode with its schema ${schemaId}`);
    }
    return { value, schemaId };
  }

  async encode(decoded: { value: unknown; schemaId: number }, cleanTopic: string): Promise<Buffer> {
    const rawId = decoded.schemaId;
    const c = cleanSchema(await this.writer(rawId), rawId);
    const cleanId = await memo(this.cleanIds, `${rawId}\u0000${cleanTopic}`, () => this.registry.register(`${cleanTopic}-value`, c.text));
    let payload: Buffer;
    try {
      payload = c.type.toBuffer(decoded.value);
    } catch {
      const paths: string[] = [];
      c.type.isValid(decoded.value, { errorHook: (path: string[]) => paths.push(path.join('.') || '(the record)') });
      throw new StreamError(
        'RECORD_MALFORMED',
        `the protected value does not match the clean schema of raw schema ${rawId} at ${paths.join(', ') || 'an unknown field'}`,
      );
    }
    const out = Buffer.allocUnsafe(HEADER + payload.length);
    out[0] = 0;
    out.writeUInt32BE(cleanId, 1);
    payload.copy(out, HEADER);
    return out;
  }

  async protect(bytes: Buffer, protection: RecordProtection, cleanTopic: string): Promise<Buffer> {
    return (await this.protectOne(bytes, protection, cleanTopic)).value;
  }

  /** record by record (the values are decoded objects: nothing to gain from one batch per field), each with its protected paths */
  async protectMany(
    values: readonly Buffer[],
    protection: RecordProtection,
    cleanTopics: readonly string[],
    fields?: (string | undefined)[],
  ): Promise<(Buffer | StreamError)[]> {
    const out: (Buffer | StreamError)[] = [];
    for (let i = 0; i < values.length; i++) {
      try {
        const one = await this.protectOne(values[i]!, protection, cleanTopics[i]!);
        if (fields !== undefined) fields[i] = one.fields;
        out.push(one.value);
      } catch (e) {
        if (e instanceof StreamError && !e.retriable) out.push(e);
        else throw e;
      }
    }
    return out;
  }

  /**
   * One record: decoded, its mapped fields protected, the unmapped guard's findings refused or
   * protected in place (decoded-drift-guard.ts), encoded; and the paths protected in it (the mapped
   * paths that held a value, then the guard's).
   */
  private async protectOne(bytes: Buffer, protection: RecordProtection, cleanTopic: string): Promise<{ value: Buffer; fields: string }> {
    const decoded = await this.decode(bytes);
    const id = decoded.schemaId;
    const w = await this.writer(id);
    const refusal = tagRefusal(w.tags.unmapped, protection, String(id), false);
    if (refusal) throw refusal;
    const maps = this.mapsOf(protection, id, w);
    const done = protectRecord(decoded.value, maps, protection.missing);
    const mapped = maps.map((m) => m.path);
    const guard = maps === protection.maps ? guardFor(protection) : guardFor(protection, mapped, String(id));
    const guarded = guard === undefined ? [] : applyGuard(guard, protection, decoded.value);
    const value = await this.encode(decoded, cleanTopic);
    return { value, fields: [...done, ...guarded.filter((p) => !done.includes(p))].join(',') };
  }

  /** the mappings of a schema's records: the pipeline's, then the fields the schema tags with a tag the pipeline maps */
  private mapsOf(protection: RecordProtection, id: number, w: Writer): readonly Mapping[] {
    if (w.tags.mapped.length === 0) return protection.maps;
    let byId = this.schemaMaps.get(protection);
    if (byId === undefined) this.schemaMaps.set(protection, (byId = new Map()));
    let maps = byId.get(id);
    if (maps === undefined) byId.set(id, (maps = [...protection.maps, ...tagMappings(w.tags.mapped, protection)]));
    return maps;
  }
}

/** a raw schema's reader, its clean schema (or why the pipeline refuses it) and its tagged fields */
function resolveWriter(id: number, text: string, protectedPaths: readonly string[], mappedTags: ReadonlySet<string>): Writer {
  let type: avro.Type;
  try {
    type = avroType(avscSchema(text));
  } catch {
    throw new StreamError('RECORD_MALFORMED', `schema ${id} is not an Avro schema avsc can read`);
  }
  let tags = NO_TAGS;
  try {
    tags = planTags(avroTaggedFields(text), protectedPaths, mappedTags, false);
    // the registered text is the derivation's (numbers as written), never avsc's re-serialisation
    const cleanText = deriveCleanSchema(text, [...protectedPaths, ...tags.mapped.map((t) => t.path)]);
    return { type, clean: { text: cleanText, type: avroType(avscSchema(cleanText)) }, tags };
  } catch (e) {
    const unfit = unfitReason(e);
    if (unfit?.unknownPath !== undefined)
      return { type, clean: { error: unfit.error, unknownPath: unknownAvroPaths(text, protectedPaths)[0] ?? unfit.unknownPath }, tags };
    return { type, clean: unfit ?? { error: `the derived clean schema is not valid Avro (${(e as Error).message})` }, tags };
  }
}

/** the clean schema records of schema `id` are written with; the pipeline's refusal when it has none */
function cleanSchema(w: Writer, id: number): { text: string; type: avro.Type } {
  if ('error' in w.clean) {
    const path = w.clean.unknownPath;
    if (path !== undefined)
      throw new StreamError(
        'SCHEMA_PATH_UNKNOWN',
        `schema ${id} has no field at the mapped path ${path} (Avro field names match exactly): the pipeline refuses its records`,
        { path, schema: id },
      );
    throw new StreamError('RECORD_MALFORMED', `schema ${id} does not fit the pipeline's mapped paths: ${w.clean.error}`);
  }
  return w.clean;
}
