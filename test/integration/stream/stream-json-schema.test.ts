import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REGISTRY_URL, consume, kafkaClient, produce, topicsFor } from '../../helpers/kafka.ts';
import { startedPipeline, unprotector } from '../../helpers/stream.ts';

const schema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: {
    id: { type: 'integer' },
    email: { type: 'string', minLength: 3 },
    cards: {
      type: 'array',
      items: { type: 'object', properties: { number: { type: 'string', pattern: '^[0-9 -]+$' }, brand: { type: 'string' } }, required: ['number'] },
    },
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

  // the clean and dead-letter records so far: each test reads the topics from the beginning
  let cleanSoFar = 0;
  let deadSoFar = 0;
  const wire = (schemaId: number, json: string) => {
    const header = Buffer.alloc(5);
    header.writeUInt32BE(schemaId, 1);
    return Buffer.concat([header, Buffer.from(json, 'utf8')]);
  };
  /** registered as a producer would, over the registry's API (the client above checks a schema with its own ajv, which knows no draft-04) */
  const registered = async (subject: string, text: unknown) => {
    const res = await fetch(`${REGISTRY_URL}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schemaType: 'JSON', schema: JSON.stringify(text) }),
    });
    if (!res.ok) throw new Error(`registering under ${subject}: HTTP ${res.status} ${await res.text()}`);
    return ((await res.json()) as { id: number }).id;
  };

  beforeAll(async () => {
    pipeline = await startedPipeline(kafka, t, 'json-schema', '    validate: true');
    ({ dataDir, configFile } = pipeline);
  }, 120_000);
  afterAll(async () => pipeline?.close());

  it('protects the mapped values, keeps every other byte, and writes behind a clean schema a Confluent client reads and validates', async () => {
    const { id } = await client.register({ type: SchemaType.JSON, schema: JSON.stringify(schema) }, { subject: `${t.raw}-value` });
    const customer = (i: number) => ({
      id: i,
      email: `js${i}@example.com`,
      cards: [{ number: `4111 1111 1111 ${String(1000 + i).slice(-4)}`, brand: 'visa' }],
      profile: i % 4 === 0 ? null : { name: `Json Person ${i}`, tier: i % 3 },
    });
    const records = await Promise.all(Array.from({ length: 40 }, async (_, i) => ({ key: customer(i).email, value: await client.encode(id, customer(i)) })));
    const header = Buffer.alloc(5);
    header.writeUInt32BE(id, 1);
    // the client writes compact JSON; a producer may write any JSON text: its bytes are kept
    const spaced = Buffer.concat([header, Buffer.from('{ "id": 1000,\n  "email": "spaced@example.com", "cards": [], "profile": null, "note": 1.50 }')]);
    await produce(kafka, t.raw, [
      ...records,
      { key: 'spaced', value: spaced },
      { key: 'bad', value: Buffer.concat([header, Buffer.from('{"id": 1, "email":')]) },
      { key: 'bad2', value: Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0]), Buffer.from('{}')]) },
    ]);

    const clean = await consume(kafka, t.clean, 41);
    const dead = await consume(kafka, t.dlq, 2);
    [cleanSoFar, deadSoFar] = [clean.length, dead.length];
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
    const cleanSchema = JSON.parse(
      ((await (await fetch(`${REGISTRY_URL}/schemas/ids/${clean[0]!.value!.readUInt32BE(1)}`)).json()) as { schema: string }).schema,
    );
    expect(cleanSchema.properties.cards.items.properties.number).toEqual({ type: 'string' });
    expect(cleanSchema.properties.profile.properties.name).toEqual({ type: ['string', 'null'] });
  }, 120_000);
  it('validate: true dead-letters a record its raw schema refuses (RECORD_INVALID), unchanged, and the records of a schema it cannot compile (RECORD_MALFORMED)', async () => {
    const id = await registered(`${t.raw}-value`, schema);
    const draft04 = await registered(`${t.raw}-old-value`, { ...schema, $schema: 'http://json-schema.org/draft-04/schema#' });
    const refused = [
      '{"id": 1, "email": "ab"}', // minLength
      '{"id": "x7", "email": "abc@example.com"}', // type
      '{"id": 3, "email": "abc@example.com", "cards": [{"number": "4111-1111-secret"}]}', // pattern
      '{"email": "abc@example.com"}', // required
    ];
    await produce(kafka, t.raw, [
      ...refused.map((json, i) => ({ key: `refused${i}@example.com`, value: wire(id, json) })),
      { key: 'old@example.com', value: wire(draft04, '{"id": 5, "email": "abc@example.com"}') },
      { key: 'fine@example.com', value: wire(id, '{"id": 4006, "email": "fine@example.com"}') },
    ]);
    const [deadAll, cleanAll] = await Promise.all([consume(kafka, t.dlq, deadSoFar + 5), consume(kafka, t.clean, cleanSoFar + 1)]);
    const dead = deadAll.filter((d) => /^(refused|old)/.test(d.key!.toString()));
    const clean = cleanAll.filter((c) => JSON.parse(c.value!.subarray(5).toString()).id === 4006);
    [cleanSoFar, deadSoFar] = [cleanSoFar + 1, deadSoFar + 5];
    expect(dead.map((d) => [d.key!.toString(), d.headers['veil.error.code']]).sort()).toEqual(
      [['old@example.com', 'RECORD_MALFORMED'], ...refused.map((_, i) => [`refused${i}@example.com`, 'RECORD_INVALID'])].sort(),
    );
    // a dead letter is the raw record as it was
    for (const d of dead.filter((r) => r.key!.toString().startsWith('refused'))) expect(d.value).toEqual(wire(id, refused[Number(d.key!.toString()[7])]!));
    expect(clean).toHaveLength(1);
  }, 120_000);

  it('evolution: a second raw schema version (a new field) gets a second clean version; records of both versions are protected', async () => {
    // the Confluent client set the raw subject BACKWARD; a new property of an open content model narrows it
    await fetch(`${REGISTRY_URL}/config/${t.raw}-value`, {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ compatibility: 'NONE' }),
    });
    const v1 = await registered(`${t.raw}-value`, schema);
    const v2Schema = { ...schema, properties: { ...schema.properties, loyalty: { type: 'object', properties: { level: { type: 'string' } } } } };
    const v2 = await registered(`${t.raw}-value`, v2Schema);
    expect(v2).not.toBe(v1);
    await produce(kafka, t.raw, [
      { key: 'evo1@example.com', value: wire(v1, '{"id": 2001, "email": "evo1@example.com"}') },
      { key: 'evo2@example.com', value: wire(v2, '{"id": 2002, "email": "evo2@example.com", "loyalty": {"level": "gold"}}') },
    ]);
    const clean = await consume(kafka, t.clean, cleanSoFar + 2);
    cleanSoFar += 2;
    const byId = new Map(clean.map((c) => [JSON.parse(c.value!.subarray(5).toString()).id as number, c.value!]));
    const reveal = await unprotector(configFile, dataDir);
    const [one, two] = [byId.get(2001)!, byId.get(2002)!];
    expect(reveal('Customer.email', JSON.parse(one.subarray(5).toString()).email)).toBe('evo1@example.com');
    expect(reveal('Customer.email', JSON.parse(two.subarray(5).toString()).email)).toBe('evo2@example.com');
    expect(JSON.parse(two.subarray(5).toString()).loyalty).toEqual({ level: 'gold' });
    const [cleanV1, cleanV2] = [one.readUInt32BE(1), two.readUInt32BE(1)];
    expect(cleanV2).not.toBe(cleanV1);
    const cleanSchema = async (cleanId: number) =>
      JSON.parse(((await (await fetch(`${REGISTRY_URL}/schemas/ids/${cleanId}`)).json()) as { schema: string }).schema);
    expect((await cleanSchema(cleanV1)).properties.loyalty).toBeUndefined();
    expect((await cleanSchema(cleanV2)).properties.loyalty).toEqual(v2Schema.properties.loyalty);
    expect((await cleanSchema(cleanV2)).properties.email).toEqual({ type: 'string' });
    const versions = (await (await fetch(`${REGISTRY_URL}/subjects/${t.clean}-value/versions`)).json()) as number[];
    expect(versions.length).toBeGreaterThanOrEqual(2);
    // the Confluent client reads both, each against its own clean version
    expect(await client.decode(one)).toMatchObject({ id: 2001 });
    expect(await client.decode(two)).toMatchObject({ id: 2002, loyalty: { level: 'gold' } });
  }, 120_000);

  it('lossless: outside the mapped values every byte stays (numbers beyond 2^53, 1.0, -0.0, escapes, whitespace, key order, duplicate keys), behind the clean schema id', async () => {
    const id = await registered(`${t.raw}-value`, schema);
    const docs = [
      '{"id":9007199254740993, "email":"ann@example.com","big":9223372036854775807,"f":1.0,"z":-0.0,"e":1E+2}',
      '{\n  "id": 3002, "nested": {"s": "caf\\u00e9 \\/ \\"q\\""},\n  "email" : "bob@example.com" ,\n  "profile": {"name": "Bob \\u0042uilder", "tier": 1.0}\n}',
      '{"id":3003,"email":"dup@example.com","x":[1,2.50,-3e-7],"email":"dup2@example.com","cards":[{"number":"4111 1111 1111 1111","brand":"v"}]}',
    ];
    await produce(
      kafka,
      t.raw,
      docs.map((d, i) => ({ key: `lossless${i}@example.com`, value: wire(id, d) })),
    );
    const clean = await consume(kafka, t.clean, cleanSoFar + docs.length);
    cleanSoFar += docs.length;
    const reveal = await unprotector(configFile, dataDir);
    const fields: Record<string, string> = { email: 'Customer.email', number: 'Customer.cardNumber', name: 'Customer.name' };
    const mapped = /("(email|number|name)"\s*:\s*)"((?:[^"\\]|\\.)*)"/g;
    const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    for (const [i, doc] of docs.entries()) {
      const out = clean.find((c) => c.key !== null && reveal('Customer.email', c.key.toString()) === `lossless${i}@example.com`)!.value!;
      expect(out[0]).toBe(0);
      expect(out.readUInt32BE(1)).not.toBe(id);
      // the raw text with each mapped string value a capture: everything else literal
      let pattern = '^';
      let last = 0;
      const originals: [field: string, value: string][] = [];
      for (const m of doc.matchAll(mapped)) {
        pattern += escape(doc.slice(last, m.index) + m[1]) + '"((?:[^"\\\\]|\\\\.)*)"';
        last = m.index! + m[0].length;
        originals.push([fields[m[2]!]!, JSON.parse(`"${m[3]}"`) as string]);
      }
      pattern += `${escape(doc.slice(last))}$`;
      const got = new RegExp(pattern).exec(out.subarray(5).toString('utf8'));
      expect(got, doc).not.toBeNull();
      originals.forEach(([field, value], j) => {
        const protectedValue = JSON.parse(`"${got![j + 1]}"`) as string;
        expect(protectedValue).not.toBe(value);
        expect(reveal(field, protectedValue)).toBe(value);
      });
    }
  }, 120_000);
});
