import { ValueError, type Chain } from '../../engine/index.ts';
import { memo } from '../memo.ts';
import type { Mapping } from './field-mappings.ts';
import type { SchemaRegistryPort } from '../registry/index.ts';
import { schemaUnfit, StreamError, unfitReason } from '../stream-error.ts';
import { deriveCleanProtobuf } from './protobuf-clean.ts';
import { compilePlan, type PlanNode } from './protobuf-plan.ts';
import { decodeMessage, protectEach, protectInto } from './protobuf-protect.ts';
import { WireWriter } from './protobuf-writer.ts';
import { messageAt, parseProtoSchema, protoTaggedFields, type ProtoMessage, type ProtoSchema } from './protobuf-schema.ts';
import { planTags, tagMappings, tagRefusal, type SchemaTags } from './schema-tags.ts';
import { guardFor, unmappedError } from './decoded-drift-guard.ts';
import { protoFinding } from './protobuf-drift-guard.ts';
import { readFraming } from './protobuf-wire.ts';
import type { RecordProtection, Serde } from './serde.ts';

const EMPTY = Buffer.alloc(0);

export interface ProtobufSerdeOptions {
  registry: SchemaRegistryPort;
  /** the pipeline's record paths (`cards[].number`): protected fields, retyped to string when they are not */
  protectedPaths: readonly string[];
  /** the Confluent tags the pipeline maps (`tags`): fields a schema tags so are protected too */
  tags?: readonly string[];
}


/** what one (raw schema id, message indexes) resolves to, once */
type Target = { key: string; schema: ProtoSchema; message: ProtoMessage; plan: PlanNode; cleanText: string; tags: SchemaTags } | { error: string; unknownPath?: string };

/**
 * Protobuf values in the Confluent wire format: magic byte 0, the schema id, the message-index
 * list, the message. The message is rewritten at the wire level (protobuf-protect.ts): only the
 * mapped fields' bytes change, so unknown fields and every unmapped byte pass through as written.
 * The output keeps the index list and goes out behind the clean schema's id: the raw schema with
 * each protected non-string field made `string` under the same number (protobuf-clean.ts),
 * registered as schemaType PROTOBUF under `<cleanTopic>-value`, in the form the raw schema had
 * (`.proto` text, or a base64 FileDescriptorProto as confluent-kafka-python registers). Plans and
 * clean ids are cached per raw schema id and message, so a steady stream costs no registry call.
 * Imports other than types the record's mapped paths never walk into are not resolved. A schema
 * whose record message lacks a mapped path's field is refused: its records are dead-lettered
 * SCHEMA_PATH_UNKNOWN with the path.
 *
 * With the unmapped guard (`protection.guard`) each record's message is also decoded
 * (decodeMessage: scalars as their text, maps as `{key, value}` entries; unknown fields and bytes
 * are not looked at) and every value at a path no mapping names is checked: a finding
 * dead-letters the record (UNMAPPED_PERSONAL_DATA, path and kind) whatever the action — the
 * message is rewritten at the wire level under a clean schema derived per schema, so a field the
 * schema types as a number cannot take a protected string: map the field instead.
 */
/** The Protobuf serde, and a decoder of raw values for discovery. */
export interface ProtobufSerde extends Serde {
  /** the record's message as a plain object (decodeMessage): scalars as text, unknown fields left out */
  decode(bytes: Buffer): Promise<Record<string, unknown>>;
}

export function protobufSerde(options: ProtobufSerdeOptions): ProtobufSerde {
  const { registry, protectedPaths } = options;
  const mappedTags = new Set(options.tags ?? []);
  const schemas = new Map<number, Promise<ProtoSchema | { error: string }>>();
  const targets = new Map<string, Promise<Target>>();
  const cleanIds = new Map<string, Promise<number>>();
  const transformsOf = new WeakMap<readonly Mapping[], Map<string, Chain>>();
  // per protection and target with tagged fields: the pipeline's transforms plus the tags'
  const taggedTransforms = new WeakMap<RecordProtection, Map<string, Map<string, Chain>>>();
  // the last record prepared: its raw header bytes, clean topic and protection (preparedAgain)
  let last: { raw: Buffer; topic: string; protection: RecordProtection; prepared: Prepared } | undefined;

  const schemaOf = (id: number) => memo(schemas, id, async () => {
    const text = await registry.schemaById(id);
    try {
      return parseProtoSchema(text);
    } catch (e) {
      return { error: unfitReason(e)?.error ?? 'it does not parse' };
    }
  });

  const targetOf = (id: number, indexes: number[]) => memo(targets, `${id}:${indexes.join(',')}`, async (): Promise<Target> => {
    const schema = await schemaOf(id);
    if ('error' in schema) return schema;
    const message = messageAt(schema, indexes);
    if (!message) return { error: `it has no message at index [${indexes.join(', ')}]` };
    try {
      // the mapped paths first: a path the schema lacks is named before anything the tags add
      const tags = planTags(protoTaggedFields(schema, message), protectedPaths, mappedTags, false);
      const { plan, retypes } = compilePlan(schema, message, [...protectedPaths, ...tags.mapped.map((t) => t.path)]);
      const cleanText = deriveCleanProtobuf(schema, retypes);
      checkClean(cleanText, retypes.map((r) => `${r.message}#${r.field}`));
      return { key: `${id}:${indexes.join(',')}`, schema, message, plan, cleanText, tags };
    } catch (e) {
      const unfit = unfitReason(e);
      if (unfit) return unfit;
      throw e;
    }
  });

  return {
    async decode(bytes: Buffer): Promise<Record<string, unknown>> {
      const { schemaId, indexes, bodyStart } = readFraming(bytes);
      const schema = await schemaOf(schemaId);
      if ('error' in schema) throw new StreamError('RECORD_MALFORMED', `schema ${schemaId} is not a Protobuf schema veil can read: ${schema.error}`);
      const message = messageAt(schema, indexes);
      if (!message) throw new StreamError('RECORD_MALFORMED', `schema ${schemaId} has no message at index [${indexes.join(', ')}]`);
      return decodeMessage(bytes, bodyStart, bytes.length, message, schema);
    },
    async protect(bytes: Buffer, protection: RecordProtection, cleanTopic: string): Promise<Buffer> {
      const p = await prepare(bytes, cleanTopic, protection);
      const w = new WireWriter(bytes);
      protectInto(bytes, p.bodyStart, bytes.length, p.target.plan, { schema: p.target.schema, protect: protectEach(p.transforms), missing: protection.missing }, w);
      guardRecord(bytes, p, protection);
      return framed(p, w);
    },
    async protectMany(values: readonly Buffer[], protection: RecordProtection, cleanTopics: readonly string[], fields?: (string | undefined)[]): Promise<(Buffer | StreamError)[]> {
      // a steady stream's records share one header: prepared once, not once per record (no promise each)
      const pending = values.map((bytes, i) => preparedAgain(bytes, cleanTopics[i]!, protection) ?? prepare(bytes, cleanTopics[i]!, protection).catch(deadLetter));
      const prepared = pending.some((x) => x instanceof Promise) ? await Promise.all(pending) : pending as (Prepared | StreamError)[];
      return protectPrepared(values, prepared, protection, fields);
    },
  };

  /** framing, plan, clean id and transforms of one value: a StreamError when it has none, or its schema is refused */
  async function prepare(bytes: Buffer, cleanTopic: string, protection: RecordProtection): Promise<Prepared> {
    const { schemaId, indexes, bodyStart } = readFraming(bytes);
    const target = await targetOf(schemaId, indexes);
    if ('error' in target) {
      const path = target.unknownPath;
      if (path !== undefined) throw new StreamError('SCHEMA_PATH_UNKNOWN', `schema ${schemaId} has no field at the mapped path ${path} (Protobuf field names match exactly): the pipeline refuses its records`, { path, schema: schemaId });
      throw new StreamError('RECORD_MALFORMED', `schema ${schemaId} does not fit the pipeline's mapped paths: ${target.error}`);
    }
    const refusal = tagRefusal(target.tags.unmapped, protection, target.key, false);
    if (refusal) throw refusal;
    const cleanId = await memo(cleanIds, `${schemaId}:${indexes.join(',')}\u0000${cleanTopic}`, () => registry.register(`${cleanTopic}-value`, target.cleanText, 'PROTOBUF'));
    // the raw header (magic, id, message indexes) with the clean id: what the protected record starts with
    const header = Buffer.from(bytes.subarray(0, bodyStart));
    header.writeUInt32BE(cleanId, 1);
    const p = { bodyStart, target, cleanId, header, transforms: transformsFor(protection, target) };
    last = { raw: Buffer.from(bytes.subarray(0, bodyStart)), topic: cleanTopic, protection, prepared: p };
    return p;
  }

  /**
   * The last record's preparation, when this record starts with the same header bytes (framing
   * is self-delimiting: the same bytes parse to the same schema id, indexes and body start) for
   * the same clean topic and protection: prepare would return the same (every step is a cache
   * keyed by those; only successes are kept). Undefined otherwise: prepare it.
   */
  function preparedAgain(bytes: Buffer, cleanTopic: string, protection: RecordProtection): Prepared | undefined {
    if (last === undefined || last.topic !== cleanTopic || last.protection !== protection) return undefined;
    const raw = last.raw;
    if (bytes.length < raw.length) return undefined;
    for (let k = 0; k < raw.length; k++) if (bytes[k] !== raw[k]) return undefined;
    return last.prepared;
  }

  /** each protected path's chain: the mapped paths', then (where the schema tags fields with a mapped tag) the tags' */
  function transformsFor(protection: RecordProtection, target: Prepared['target']): Map<string, Chain> {
    let transforms = transformsOf.get(protection.maps);
    if (!transforms) transformsOf.set(protection.maps, transforms = new Map(protection.maps.map((m) => [m.path, m.transform])));
    if (target.tags.mapped.length === 0) return transforms;
    let byTarget = taggedTransforms.get(protection);
    if (byTarget === undefined) taggedTransforms.set(protection, (byTarget = new Map()));
    let tagged = byTarget.get(target.key);
    if (tagged === undefined) byTarget.set(target.key, (tagged = new Map([...transforms, ...tagMappings(target.tags.mapped, protection).map((m): [string, Chain] => [m.path, m.transform])])));
    return tagged;
  }
}

interface Prepared {
  bodyStart: number;
  /** the protected record's header: the raw one with the clean schema id */
  header: Buffer;
  target: Exclude<Target, { error: string }>;
  cleanId: number;
  /** the chain of each path protected in the record (the mapped paths, then the schema's tagged fields) */
  transforms: ReadonlyMap<string, Chain>;
}

/** a record's own failure becomes its outcome; anything retriable fails the batch */
function deadLetter(e: unknown): StreamError {
  if (e instanceof StreamError && !e.retriable) return e;
  throw e;
}

/**
 * The unmapped guard (`protection.guard`) on a record: every value of its message at a path no
 * mapping names is checked on the wire (protoFinding: maps as `{key, value}` entries; unknown
 * fields and bytes are not looked at); a finding dead-letters the record, whatever the action:
 * the schema fixes the field's type, so it cannot carry a protected string — map the field.
 */
function guardRecord(bytes: Buffer, p: Prepared, protection: RecordProtection): void {
  const guard = p.target.tags.mapped.length === 0 ? guardFor(protection) : guardFor(protection, [...p.transforms.keys()], p.target.key);
  if (guard === undefined) return;
  const found = protoFinding(bytes, p.bodyStart, bytes.length, p.target.message, p.target.schema, guard);
  if (found !== undefined) throw unmappedError({ ...found, key: false }, ' (Protobuf: map the field to protect it)');
}

/** the raw header (magic, id, message indexes) with the clean id, then the protected message */
function framed(p: Prepared, w: WireWriter): Buffer {
  return w.finish(p.header);
}

/** one batch of values protected together (Chain.many): a path's values under one chain */
interface Batch {
  path: string;
  chain: Chain;
  list: string[];
  results?: (string | ValueError)[];
}

/**
 * Where each value of a chunk's records went, in walk order, for all records in one pair of
 * arrays (no arrays or closures per record): the k-th value met is `batch[k].list[at[k]]`, and a
 * record's values are those from its `first` to the next record's.
 */
class Slots {
  readonly batch: Batch[] = [];
  readonly at: number[] = [];

  /** A record's values are taken back (it is dead-lettered): the last of their batches. */
  dropFrom(first: number): void {
    for (let k = first; k < this.batch.length; k++) this.batch[k]!.list.pop();
    this.batch.length = first;
    this.at.length = first;
  }
}

/**
 * Many records with each path's values protected as one batch (Chain.many): a first walk collects
 * the values (and finds the records that fail by their shape), the batch is protected, a second
 * walk writes the records with the results in the same order. A record failing both by its shape
 * (malformed, a field missing) and by a value reports its shape here; protect() reports what its
 * walk meets first.
 */
function protectPrepared(values: readonly Buffer[], prepared: readonly (Prepared | StreamError)[], protection: RecordProtection, fields?: (string | undefined)[]): (Buffer | StreamError)[] {
  const batches = batchesOf();
  const slots = new Slots();
  // per record: where its slots start, or why it failed
  const first: (number | StreamError)[] = [];
  let current: Prepared;
  const collect = { schema: undefined as unknown as ProtoSchema, missing: protection.missing, protect: (path: string, text: string) => {
    const batch = batches(current, path);
    slots.batch.push(batch);
    slots.at.push(batch.list.length);
    batch.list.push(text);
    return '';
  } };
  prepared.forEach((p, i) => {
    if (p instanceof StreamError) return void first.push(p);
    const from = slots.batch.length;
    current = p;
    collect.schema = p.target.schema;
    try {
      protectInto(values[i]!, p.bodyStart, values[i]!.length, p.target.plan, collect, undefined);
      guardRecord(values[i]!, p, protection);
      first.push(from);
    } catch (e) {
      slots.dropFrom(from);
      first.push(deadLetter(e));
    }
  });
  for (const batch of batches.all) if (batch.list.length) batch.results = batch.chain.many(batch.list);
  let k = 0;
  const take = { schema: undefined as unknown as ProtoSchema, missing: protection.missing, textsRead: true, protect: (path: string) => {
    const batch = slots.batch[k]!;
    if (batch.path !== path) throw new Error(`protobuf serde: the second walk met ${path} where the first met ${batch.path}`);
    const out = batch.results![slots.at[k++]!]!;
    if (out instanceof ValueError) throw new StreamError(out.code, `mapped field ${path}: value ${out.message}`);
    return out;
  } };
  const w = new WireWriter(EMPTY);
  return prepared.map((p, i) => {
    const from = first[i]!;
    if (p instanceof StreamError) return p;
    if (from instanceof StreamError) return from;
    k = from;
    take.schema = p.target.schema;
    try {
      protectInto(values[i]!, p.bodyStart, values[i]!.length, p.target.plan, take, w.reset(values[i]!));
      const out = framed(p, w);
      if (fields !== undefined) fields[i] = protectedPaths(slots.batch, from, k, p);
      return out;
    } catch (e) {
      return deadLetter(e);
    }
  });
}

/** the batch of a path's values under a record's chain for it (a path a schema tags may have another schema's chain) */
function batchesOf(): ((p: Prepared, path: string) => Batch) & { all: Batch[] } {
  const byPath = new Map<string, Batch[]>();
  const all: Batch[] = [];
  const of = (p: Prepared, path: string) => {
    const chain = p.transforms.get(path)!;
    let list = byPath.get(path);
    if (list === undefined) byPath.set(path, (list = []));
    for (const batch of list) if (batch.chain === chain) return batch;
    const batch: Batch = { path, chain, list: [] };
    list.push(batch);
    all.push(batch);
    return batch;
  };
  return Object.assign(of, { all });
}

/** veil.protected.fields of a record (its values are `taken[from, to)`): the paths a value was protected at, in the order of the schema's transforms (mapped paths, then tagged fields) */
function protectedPaths(taken: readonly Batch[], from: number, to: number, p: Prepared): string {
  let out = '';
  for (const path of p.transforms.keys()) {
    let met = false;
    for (let k = from; k < to && !met; k++) met = taken[k]!.path === path;
    if (met) out = out === '' ? path : `${out},${path}`;
  }
  return out;
}

/** The derived schema parses and has every retyped field as a string: else nothing is registered. */
function checkClean(text: string, retyped: string[]): void {
  const clean = parseProtoSchema(text);
  for (const key of retyped) {
    const [message, number] = key.split('#') as [string, string];
    const field = clean.messages.get(message)?.fields.find((f) => f.number === Number(number));
    if (field?.kind !== 'string') throw schemaUnfit(`the clean schema could not make ${message} field ${number} a string`);
  }
}
