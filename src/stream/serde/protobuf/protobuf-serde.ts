import type { Chain } from '../../../engine/index.ts';
import { memo } from '../../memo.ts';
import type { SchemaRegistryPort } from '../../registry/index.ts';
import { StreamError } from '../../stream-error.ts';
import type { Mapping } from '../field-mappings.ts';
import { deadLetter, framed, guardRecord, protectPrepared, type Prepared } from './protobuf-batch.ts';
import { decodeMessage, protectEach, protectInto } from './protobuf-protect.ts';
import { messageAt } from './protobuf-schema.ts';
import { ProtobufTargets } from './protobuf-targets.ts';
import { readFraming } from './protobuf-wire.ts';
import { WireWriter } from './protobuf-writer.ts';
import { tagMappings, tagRefusal } from '../schema-tags.ts';
import type { RecordProtection, Serde } from '../serde.ts';

export interface ProtobufSerdeOptions {
  registry: SchemaRegistryPort;
  /** the pipeline's record paths (`cards[].number`): protected fields, retyped to string when they are not */
  protectedPaths: readonly string[];
  /** the Confluent tags the pipeline maps (`tags`): fields a schema tags so are protected too */
  tags?: readonly string[];
}

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
  return new ProtobufRecords(options);
}

/** protobufSerde's state: the schemas' targets, clean ids and chains, each resolved once, and the last record's preparation */
class ProtobufRecords implements ProtobufSerde {
  private readonly registry: SchemaRegistryPort;
  private readonly targets: ProtobufTargets;
  private readonly cleanIds = new Map<string, Promise<number>>();
  private readonly transformsOf = new WeakMap<readonly Mapping[], Map<string, Chain>>();
  // per protection and target with tagged fields: the pipeline's transforms plus the tags'
  private readonly taggedTransforms = new WeakMap<RecordProtection, Map<string, Map<string, Chain>>>();
  // the last record prepared: its raw header bytes, clean topic and protection (preparedAgain)
  private last: { raw: Buffer; topic: string; protection: RecordProtection; prepared: Prepared } | undefined;

  constructor(options: ProtobufSerdeOptions) {
    this.registry = options.registry;
    this.targets = new ProtobufTargets(options.registry, options.protectedPaths, new Set(options.tags ?? []));
  }

  async decode(bytes: Buffer): Promise<Record<string, unknown>> {
    const { schemaId, indexes, bodyStart } = readFraming(bytes);
    const schema = await this.targets.schemaOf(schemaId);
    if ('error' in schema) throw new StreamError('RECORD_MALFORMED', `schema ${schemaId} is not a Protobuf schema veil can read: ${schema.error}`);
    const message = messageAt(schema, indexes);
    if (!message) throw new StreamError('RECORD_MALFORMED', `schema ${schemaId} has no message at index [${indexes.join(', ')}]`);
    return decodeMessage(bytes, bodyStart, bytes.length, message, schema);
  }

  async protect(bytes: Buffer, protection: RecordProtection, cleanTopic: string): Promise<Buffer> {
    const p = await this.prepare(bytes, cleanTopic, protection);
    const w = new WireWriter(bytes);
    protectInto(
      bytes,
      p.bodyStart,
      bytes.length,
      p.target.plan,
      { schema: p.target.schema, protect: protectEach(p.transforms), missing: protection.missing },
      w,
    );
    guardRecord(bytes, p, protection);
    return framed(p, w);
  }

  async protectMany(
    values: readonly Buffer[],
    protection: RecordProtection,
    cleanTopics: readonly string[],
    fields?: (string | undefined)[],
  ): Promise<(Buffer | StreamError)[]> {
    // a steady stream's records share one header: prepared once, not once per record (no promise each)
    const pending = values.map(
      (bytes, i) => this.preparedAgain(bytes, cleanTopics[i]!, protection) ?? this.prepare(bytes, cleanTopics[i]!, protection).catch(deadLetter),
    );
    const prepared = pending.some((x) => x instanceof Promise) ? await Promise.all(pending) : (pending as (Prepared | StreamError)[]);
    return protectPrepared(values, prepared, protection, fields);
  }

  /** framing, plan, clean id and transforms of one value: a StreamError when it has none, or its schema is refused */
  private async prepare(bytes: Buffer, cleanTopic: string, protection: RecordProtection): Promise<Prepared> {
    const { schemaId, indexes, bodyStart } = readFraming(bytes);
    const target = await this.targets.targetOf(schemaId, indexes);
    if ('error' in target) {
      const path = target.unknownPath;
      if (path !== undefined)
        throw new StreamError(
          'SCHEMA_PATH_UNKNOWN',
          `schema ${schemaId} has no field at the mapped path ${path} (Protobuf field names match exactly): the pipeline refuses its records`,
          { path, schema: schemaId },
        );
      throw new StreamError('RECORD_MALFORMED', `schema ${schemaId} does not fit the pipeline's mapped paths: ${target.error}`);
    }
    const refusal = tagRefusal(target.tags.unmapped, protection, target.key, false);
    if (refusal) throw refusal;
    const cleanId = await memo(this.cleanIds, `${schemaId}:${indexes.join(',')}\u0000${cleanTopic}`, () =>
      this.registry.register(`${cleanTopic}-value`, target.cleanText, 'PROTOBUF'),
    );
    // the raw header (magic, id, message indexes) with the clean id: what the protected record starts with
    const header = Buffer.from(bytes.subarray(0, bodyStart));
    header.writeUInt32BE(cleanId, 1);
    const p = { bodyStart, target, cleanId, header, transforms: this.transformsFor(protection, target) };
    this.last = { raw: Buffer.from(bytes.subarray(0, bodyStart)), topic: cleanTopic, protection, prepared: p };
    return p;
  }

  /**
   * The last record's preparation, when this record starts with the same header bytes (framing
   * is self-delimiting: the same bytes parse to the same schema id, indexes and body start) for
   * the same clean topic and protection: prepare would return the same (every step is a cache
   * keyed by those; only successes are kept). Undefined otherwise: prepare it.
   */
  private preparedAgain(bytes: Buffer, cleanTopic: string, protection: RecordProtection): Prepared | undefined {
    const last = this.last;
    if (last === undefined || last.topic !== cleanTopic || last.protection !== protection) return undefined;
    const raw = last.raw;
    if (bytes.length < raw.length) return undefined;
    for (let k = 0; k < raw.length; k++) if (bytes[k] !== raw[k]) return undefined;
    return last.prepared;
  }

  /** each protected path's chain: the mapped paths', then (where the schema tags fields with a mapped tag) the tags' */
  private transformsFor(protection: RecordProtection, target: Prepared['target']): Map<string, Chain> {
    let transforms = this.transformsOf.get(protection.maps);
    if (!transforms) this.transformsOf.set(protection.maps, (transforms = new Map(protection.maps.map((m) => [m.path, m.transform]))));
    if (target.tags.mapped.length === 0) return transforms;
    let byTarget = this.taggedTransforms.get(protection);
    if (byTarget === undefined) this.taggedTransforms.set(protection, (byTarget = new Map()));
    let tagged = byTarget.get(target.key);
    if (tagged === undefined)
      byTarget.set(
        target.key,
        (tagged = new Map([...transforms, ...tagMappings(target.tags.mapped, protection).map((m): [string, Chain] => [m.path, m.transform])])),
      );
    return tagged;
  }
}
