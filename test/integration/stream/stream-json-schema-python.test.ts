import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPython } from '../../helpers/confluent-python.ts';
import { BROKERS, REGISTRY_URL, kafkaClient, topicsFor } from '../../helpers/kafka.ts';
import { startedPipeline, unprotector } from '../../helpers/stream.ts';

/** The raw schema the Python side registers: 2020-12, a $ref the clean schema inlines, formats, no extra properties. */
const schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: 'Customer',
  type: 'object',
  properties: {
    id: { type: 'integer', minimum: 0 },
    email: { type: 'string', format: 'email' },
    cards: { type: 'array', items: { $ref: '#/$defs/Card' } },
    profile: { type: ['object', 'null'], properties: { name: { type: ['string', 'null'] }, tier: { type: 'integer' } }, additionalProperties: false },
  },
  required: ['id', 'email', 'cards'],
  additionalProperties: false,
  $defs: { Card: { type: 'object', properties: { number: { type: 'string', pattern: '^[0-9 ]{13,19}$' }, brand: { type: 'string' } }, required: ['number'] } },
};

/** The records json_schema_interop.py writes (its customer(i)). */
const customer = (i: number) => ({
  id: i,
  email: `py${i}@example.com`,
  cards: [{ number: `4111 1111 1111 ${String(1000 + i).padStart(4, '0')}`, brand: 'visa' }],
  profile: i % 5 === 0 ? null : { name: `Py Person ${i}`, tier: i % 3 },
});

interface Line {
  partition: number;
  offset: number;
  key: string;
  schema_id: number;
  value: ReturnType<typeof customer>;
}

/**
 * confluent-kafka's (Python) own JSON Schema serializers on both sides of a veil json-schema
 * pipeline (with validate: true), real broker, real registry: JSONSerializer writes and registers
 * the raw schema; JSONDeserializer reads the clean topic with no schema of its own — it fetches
 * the clean schema veil registered by the id in each record and validates every value against it.
 */
describe('stream: JSON Schema interop with confluent-kafka (Python) serializers', () => {
  const t = topicsFor('jsonschema-py');
  const kafka = kafkaClient();
  let pipeline: Awaited<ReturnType<typeof startedPipeline>>;

  beforeAll(async () => {
    pipeline = await startedPipeline(kafka, t, 'json-schema', '    validate: true');
  }, 120_000);
  afterAll(async () => pipeline?.close());

  it('Python JSONSerializer → veil → Python JSONDeserializer (validating against the clean schema): every record once, values unprotect to the originals', async () => {
    const N = 60;
    const produced = JSON.parse(
      await runPython('json_schema_interop.py', ['produce', BROKERS.join(','), REGISTRY_URL, t.raw, String(N), JSON.stringify(schema)]),
    ) as { schema_id: number };
    const out = await runPython('json_schema_interop.py', ['consume', BROKERS.join(','), REGISTRY_URL, t.clean, String(N), '90'], { timeout: 150_000 });
    const lines = out
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Line);
    const ids = lines.map((l) => l.value.id);
    expect({ records: lines.length, unique: new Set(ids).size }).toEqual({ records: N, unique: N });
    expect(new Set(lines.map((l) => l.schema_id)).size).toBe(1);
    expect(lines[0]!.schema_id).not.toBe(produced.schema_id);

    const reveal = await unprotector(pipeline.configFile, pipeline.dataDir);
    for (const { key, value } of lines) {
      const original = customer(value.id);
      expect(value.email).not.toBe(original.email);
      expect(reveal('Customer.email', value.email)).toBe(original.email);
      expect(reveal('Customer.email', key)).toBe(original.email);
      expect(reveal('Customer.cardNumber', value.cards[0]!.number)).toBe(original.cards[0]!.number);
      expect(value.cards[0]!.brand).toBe('visa');
      if (original.profile === null) expect(value.profile).toBeNull();
      else {
        expect(value.profile!.tier).toBe(original.profile.tier);
        expect(reveal('Customer.name', value.profile!.name)).toBe(original.profile.name);
      }
    }
    const clean = JSON.parse(((await (await fetch(`${REGISTRY_URL}/schemas/ids/${lines[0]!.schema_id}`)).json()) as { schema: string }).schema);
    expect(clean.properties.email).toEqual({ type: 'string' });
    expect(clean.properties.cards.items.properties.number).toEqual({ type: 'string' });
    expect(clean.$defs.Card.properties.number.pattern).toBe('^[0-9 ]{13,19}$');
  }, 300_000);
});
