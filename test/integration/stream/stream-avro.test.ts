import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { schemaFormats } from '../../../src/stream/serde/index.ts';
import { confluentRegistry } from '../../../src/stream/registry/index.ts';
import { arrayOf, avroRecord, nullable } from '../../helpers/avro-schema.ts';
import { confluentFrame } from '../../helpers/confluent-frame.ts';
import { REGISTRY_URL, consume, kafkaClient, produce, topicsFor } from '../../helpers/kafka.ts';
import { startedPipeline, unprotector } from '../../helpers/stream.ts';

const { avroType } = await schemaFormats();

const customerV1 = avroRecord(
  'Customer',
  {
    id: 'long',
    email: 'string',
    cards: arrayOf(avroRecord('Card', { number: 'string', brand: 'string' })),
    profile: nullable(avroRecord('Profile', { name: nullable('string'), tier: 'int' })),
  },
  'test.veil',
);
const customerV2 = { ...customerV1, fields: [...customerV1.fields, { name: 'segment', type: ['null', 'string'], default: null }] };

describe('stream: Avro pipeline against a real broker and a real registry (Apicurio, Confluent API)', () => {
  const t = topicsFor('avro');
  const kafka = kafkaClient();
  const registry = confluentRegistry(REGISTRY_URL);
  const confluentClient = new SchemaRegistry({ host: REGISTRY_URL });
  let dataDir: string;
  let configFile: string;
  let pipeline: Awaited<ReturnType<typeof startedPipeline>>;

  beforeAll(async () => {
    pipeline = await startedPipeline(kafka, t, 'avro');
    ({ dataDir, configFile } = pipeline);
  }, 120_000);
  afterAll(async () => pipeline?.close());

  it('decodes with the raw schema, protects mapped fields, writes with a derived clean schema; a new raw version yields a new clean version', async () => {
    const v1 = avroType(customerV1);
    const v2 = avroType(customerV2);
    const id1 = await registry.register(`${t.raw}-value`, JSON.stringify(customerV1));
    const id2 = await registry.register(`${t.raw}-value`, JSON.stringify(customerV2));
    const customer = (i: number) => ({
      id: i,
      email: `avro${i}@example.com`,
      cards: [{ number: `4111-1111-1111-${String(1000 + i).slice(-4)}`, brand: 'visa' }],
      profile: i % 5 === 0 ? null : { name: i % 7 === 0 ? null : `Avro Person ${i}`, tier: i % 3 },
    });
    const records = Array.from({ length: 60 }, (_, i) => {
      const c = customer(i);
      return i < 30
        ? { key: c.email, value: confluentFrame(id1, v1.toBuffer(c)) }
        : { key: c.email, value: confluentFrame(id2, v2.toBuffer({ ...c, segment: i % 2 ? 'gold' : null })) };
    });
    await produce(kafka, t.raw, [
      ...records,
      { key: 'bad', value: Buffer.from([0, 0, 0, 0, 1, 2, 3]) },
      { key: 'bad2', value: confluentFrame(999_999, Buffer.from([1])) },
    ]);

    const clean = await consume(kafka, t.clean, 60);
    const dead = await consume(kafka, t.dlq, 2);
    expect(clean).toHaveLength(60);
    const codeOf = (key: string) => dead.find((d) => d.key?.toString() === key)?.headers['veil.error.code'];
    // 'bad' names schema id 1, whichever schema the registry holds there: it does not decode, or it lacks the mapped paths
    expect(['RECORD_MALFORMED', 'SCHEMA_PATH_UNKNOWN']).toContain(codeOf('bad'));
    expect(codeOf('bad2')).toBe('SCHEMA_UNKNOWN');

    const reveal = await unprotector(configFile, dataDir);
    const cleanIds = new Set<number>();
    for (const rec of clean) {
      expect(rec.value![0]).toBe(0);
      const cleanId = rec.value!.readUInt32BE(1);
      cleanIds.add(cleanId);
      const schema = JSON.parse(await registry.schemaById(cleanId));
      const fields = Object.fromEntries(schema.fields.map((f: { name: string; type: unknown }) => [f.name, f.type]));
      expect(fields.email).toBe('string');
      expect(fields.id).toBe('long');
      const value = avroType(schema).fromBuffer(rec.value!.subarray(5)) as ReturnType<typeof customer> & { segment?: string | null };
      // the standard Confluent-format client reads veil's clean records too
      const viaClient = await confluentClient.decode(rec.value!);
      expect(JSON.parse(JSON.stringify(viaClient))).toEqual(JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? Number(v) : v))));
      const original = customer(value.id);
      expect(reveal('Customer.email', value.email)).toBe(original.email);
      expect(value.cards.map((c) => reveal('Customer.cardNumber', c.number))).toEqual(original.cards.map((c) => c.number));
      expect(value.cards[0]!.brand).toBe('visa');
      if (original.profile === null) expect(value.profile).toBeNull();
      else {
        expect(value.profile!.tier).toBe(original.profile.tier);
        if (original.profile.name === null) expect(value.profile!.name).toBeNull();
        else expect(reveal('Customer.name', value.profile!.name!)).toBe(original.profile.name);
      }
      if (value.id >= 30) expect(value.segment).toBe(value.id % 2 ? 'gold' : null);
    }
    // two raw versions → two clean versions under the clean topic's subject
    expect(cleanIds.size).toBe(2);
    const versions = await (await fetch(`${REGISTRY_URL}/subjects/${t.clean}-value/versions`)).json();
    expect(versions).toEqual([1, 2]);
  }, 120_000);
});
