import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REGISTRY_URL, consume, kafkaClient, produce, topicsFor } from '../helpers/kafka.ts';
import { startedPipeline, unprotector } from '../helpers/stream.ts';

const schema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: {
    id: { type: 'integer' },
    email: { type: 'string', minLength: 3 },
    cards: { type: 'array', items: { type: 'object', properties: { number: { type: 'string', pattern: '^[0-9 -]+$' }, brand: { type: 'string' } }, required: ['number'] } },
    profile: { type: ['object', 'null'], properties: { name: { type: ['string', 'null'] }, tier: { type: 'integer' } } },
  },
  required: ['id', 'email'],
};

/**
 * The json-schema format end to end: a Confluent-format client (@kafkajs/confluent-schema-registry,
 * its JSON Schema support) writes the raw records and registers their schema; veil protects them
 * on a real broker with a real registry; the same client reads the clean records back — it checks
 * them against the clean schema veil registered — and an engine unprotects the values.
 */
describe('stream: JSON Schema pipeline against a real broker and a real registry', () => {
  const t = topicsFor('jsonschema');
  const kafka = kafkaClient();
  const client = new SchemaRegistry({ host: REGISTRY_URL });
  let dataDir: string;
  let configFile: string;
  let pipeline: Awaited<ReturnType<typeof startedPipeline>>;

  beforeAll(async () => {
    pipeline = await startedPipeline(kafka, t, 'json-schema');
    ({ dataDir, configFile } = pipeline);
  }, 120_000);
  afterAll(async () => pipeline?.close());

  it('protects the mapped values, keeps every other byte, and writes behind a clean schema a Confluent client reads and validates', async () => {
    const { id } = await client.register({ type: SchemaType.JSON, schema: JSON.stringify(schema) }, { subject: `${t.raw}-value` });
    const customer = (i: number) => ({
      id: i, email: `js${i}@example.com`,
      cards: [{ number: `4111 1111 1111 ${String(1000 + i).slice(-4)}`, brand: 'visa' }],
      profile: i % 4 === 0 ? null : { name: `Json Person ${i}`, tier: i % 3 },
    });
    const records = await Promise.all(Array.from({ length: 40 }, async (_, i) => ({ key: customer(i).email, value: await client.encode(id, customer(i)) })));
    const header = Buffer.alloc(5);
    header.writeUInt32BE(id, 1);
    // the client writes compact JSON; a producer may write any JSON text: its bytes are kept
    const spaced = Buffer.concat([header, Buffer.from('{ "id": 1000,\n  "email": "spaced@example.com", "cards": [], "profile": null, "note": 1.50 }')]);
    await produce(kafka, t.raw, [...records, { key: 'spaced', value: spaced }, { key: 'bad', value: Buffer.concat([header, Buffer.from('{"id": 1, "email":')]) }, { key: 'bad2', value: Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0]), Buffer.from('{}')]) }]);

    const clean = await consume(kafka, t.clean, 41);
    const dead = await consume(kafka, t.dlq, 2);
    expect(clean).toHaveLength(41);
    expect(dead.map((d) => d.headers['veil.error.code']).sort()).toEqual(['RECORD_MALFORMED', 'SCHEMA_UNKNOWN']);

    const reveal = await unprotector(configFile, dataDir);
    for (const rec of clean) {
      expect(rec.value![0]).toBe(0);
      const cleanId = rec.value!.readUInt32BE(1);
      expect(cleanId).not.toBe(id);
      const text = rec.value!.subarray(5).toString();
      const value = JSON.parse(text) as ReturnType<typeof customer> & { note?: number };
      if (value.id === 1000) {
        expect(text).toMatch(/^\{ "id": 1000,\n {2}"email": "[^"]+", "cards": \[\], "profile": null, "note": 1\.50 \}$/);
        expect(reveal('Customer.email', value.email)).toBe('spaced@example.com');
        continue;
      }
      // the Confluent client decodes it, validating against the clean schema veil registered
      expect(await client.decode(rec.value!)).toEqual(value);
      const original = customer(value.id);
      expect(reveal('Customer.email', value.email)).toBe(original.email);
      expect(reveal('Customer.cardNumber', value.cards[0]!.number)).toBe(original.cards[0]!.number);
      expect(value.cards[0]!.brand).toBe('visa');
      if (original.profile === null) expect(value.profile).toBeNull();
      else {
        expect(value.profile!.tier).toBe(original.profile.tier);
        expect(reveal('Customer.name', value.profile!.name!)).toBe(original.profile.name);
      }
    }
    const cleanSchema = JSON.parse((await (await fetch(`${REGISTRY_URL}/schemas/ids/${clean[0]!.value!.readUInt32BE(1)}`)).json() as { schema: string }).schema);
    expect(cleanSchema.properties.cards.items.properties.number).toEqual({ type: 'string' });
    expect(cleanSchema.properties.profile.properties.name).toEqual({ type: ['string', 'null'] });
  }, 120_000);
});
