import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileVeilConfigText } from '../../../src/app/config-file.ts';
import { arrayOf, avroRecord, nullable } from '../../helpers/avro-schema.ts';
import { fakeCliIo, tempDir, veil } from '../../helpers/cli-io.ts';
import { confluentFrame } from '../../helpers/confluent-frame.ts';
import { BROKERS, createTopics, kafkaClient, REGISTRY_URL } from '../../helpers/kafka.ts';
import { confluentRegistry } from '../../../src/stream/registry/index.ts';
import { schemaFormats } from '../../../src/stream/serde/index.ts';
import { databaseUrl, psql } from '../../helpers/postgres.ts';
import { DEMO_PEOPLE, demoRecord } from '../../helpers/demo-records.ts';

const { avroType } = await schemaFormats();

/**
 * `veil discover` against real sources: the demo's records on a real broker (JSON values, email
 * keys), rows of a PostgreSQL table, a JSON-lines file. Its output holds paths, kinds and counts;
 * no sampled value.
 */

const table = `discover_${process.pid}_${randomBytes(3).toString('hex')}`;

function expectNoValues(text: string): void {
  for (const [name, email, card] of DEMO_PEOPLE) for (const v of [name, email, card]) expect(text).not.toContain(v);
}

beforeAll(async () => {
  await psql(`CREATE TABLE ${table} (id int, contact_email text, phone text, iban text, created_at date);
INSERT INTO ${table} SELECT i, 'user' || i || '@example.com', '+44 20 7946 0958', 'GB82WEST12345698765432', date '2024-01-01' + i FROM generate_series(1, 40) i;`);
});

afterAll(async () => {
  await psql(`DROP TABLE IF EXISTS ${table};`);
});

describe('veil discover', () => {
  it("on the demo's raw topic: finds email, card numbers, the name and the email keys; its draft validates and maps what config/example-pipeline.yaml maps", async () => {
    const kafka = kafkaClient();
    const topic = `raw.customers.${randomBytes(4).toString('hex')}`;
    await createTopics(kafka, [topic], 2);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: Array.from({ length: 60 }, (_, i) => ({ key: demoRecord(i).email, value: JSON.stringify(demoRecord(i)) })) });
    await producer.disconnect();
    const dir = await tempDir();
    const draft = join(dir, 'draft.yaml');
    const run = await veil(fakeCliIo(dir, { KAFKA_BROKERS: BROKERS.join(',') }), ['discover', '--topic', topic, '--draft', draft]);
    expect(run.code, run.err).toBe(0);
    expect(run.out).toMatch(/sampled 60 record\(s\); 4 field\(s\) hold personal data/);
    expect(run.out).toMatch(/\(key\)\s+email\s+60\/60/);
    expect(run.out).toMatch(/cards\[\]\.number\s+payment-card\s+60\/60/);
    expect(run.out).toMatch(/profile\.name\s+person-name\s+60\/60/);
    expectNoValues(run.out + run.err);
    const validate = await veil(fakeCliIo(dir), ['config', 'validate', draft]);
    expect(validate.code, validate.out).toBe(0);
    const { readFile } = await import('node:fs/promises');
    const text = await readFile(draft, 'utf8');
    expectNoValues(text);
    const pipeline = Object.values(compileVeilConfigText(text).config!.pipelines)[0]!;
    expect(pipeline.fields.map((f) => f.path).sort()).toEqual(['cards[].number', 'email', 'profile.name']);
    expect(pipeline.key?.field).toBe('Customer.email');
  }, 60_000);

  it('on an Avro topic (Confluent wire format, schema from the registry): the same findings; bytes and undecodable values are skipped', async () => {
    const schema = avroRecord(
      'Customer',
      {
        id: 'long',
        email: 'string',
        photo: 'bytes',
        cards: arrayOf(avroRecord('Card', { number: 'string' })),
        profile: nullable(avroRecord('Profile', { name: 'string' })),
      },
      'test.discover',
    );
    const kafka = kafkaClient();
    const topic = `raw.avro.customers.${randomBytes(4).toString('hex')}`;
    await createTopics(kafka, [topic], 1);
    const id = await confluentRegistry(REGISTRY_URL).register(`${topic}-value`, JSON.stringify(schema));
    const type = avroType(schema);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic,
      messages: [
        ...Array.from({ length: 20 }, (_, i) => {
          const d = demoRecord(i);
          return {
            value: confluentFrame(
              id,
              type.toBuffer({ id: i, email: d.email, photo: Buffer.from('alice@example.com'), cards: d.cards, profile: d.profile && { name: d.profile.name } }),
            ),
          };
        }),
        { value: Buffer.from('not avro') },
      ],
    });
    await producer.disconnect();
    const dir = await tempDir();
    const run = await veil(fakeCliIo(dir, { KAFKA_BROKERS: BROKERS.join(','), SCHEMA_REGISTRY_URL: REGISTRY_URL }), [
      'discover',
      '--topic',
      topic,
      '--format',
      'avro',
      '--draft',
      '-',
    ]);
    expect(run.code, run.err).toBe(0);
    expect(run.out).toMatch(/sampled 20 record\(s\), 1 not decodable \(skipped\); 3 field\(s\)/);
    expect(run.out).toMatch(/cards\[\]\.number\s+payment-card/);
    expect(run.out).toMatch(/profile\.name\s+person-name/);
    expect(run.out).toContain('format: avro');
    expect(run.out).not.toContain('photo');
    expectNoValues(run.out + run.err);
  }, 60_000);

  it.each(['protobuf', 'json-schema'] as const)(
    'on a %s topic (Confluent wire format, schema from the registry): the same findings, and a draft for that format that validates',
    async (format) => {
      const proto =
        'syntax = "proto3";\npackage test.discover;\nmessage Customer { string id = 1; string email = 2; repeated Card cards = 3; Profile profile = 4; bytes photo = 5; }\nmessage Card { string number = 1; }\nmessage Profile { string name = 1; string tier = 2; }\n';
      const jsonSchema = JSON.stringify({
        type: 'object',
        properties: {
          id: { type: 'string' },
          email: { type: 'string' },
          cards: { type: 'array', items: { type: 'object', properties: { number: { type: 'string' } } } },
          profile: { type: 'object', properties: { name: { type: 'string' }, tier: { type: 'string' } } },
        },
      });
      const kafka = kafkaClient();
      const topic = `raw.${format}.customers.${randomBytes(4).toString('hex')}`;
      await createTopics(kafka, [topic], 1);
      const id = await confluentRegistry(REGISTRY_URL).register(
        `${topic}-value`,
        format === 'protobuf' ? proto : jsonSchema,
        format === 'protobuf' ? 'PROTOBUF' : 'JSON',
      );
      const Customer = protobuf.parse(proto, { keepCase: true }).root.lookupType('test.discover.Customer');
      // protobuf: the message-index list [0] in its short form
      const indexes = Buffer.alloc(format === 'protobuf' ? 1 : 0);
      const encode = (d: ReturnType<typeof demoRecord>) =>
        format === 'protobuf' ? Customer.encode(Customer.fromObject({ ...d, photo: Buffer.from(d.email) })).finish() : Buffer.from(JSON.stringify(d));
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({
        topic,
        messages: [
          ...Array.from({ length: 20 }, (_, i) => ({ key: demoRecord(i).email, value: confluentFrame(id, indexes, encode(demoRecord(i))) })),
          { value: Buffer.from('not framed') },
        ],
      });
      await producer.disconnect();
      const dir = await tempDir();
      const draft = join(dir, 'draft.yaml');
      const run = await veil(fakeCliIo(dir, { KAFKA_BROKERS: BROKERS.join(','), SCHEMA_REGISTRY_URL: REGISTRY_URL }), [
        'discover',
        '--topic',
        topic,
        '--format',
        format,
        '--draft',
        draft,
      ]);
      expect(run.code, run.err).toBe(0);
      expect(run.out).toMatch(/sampled 20 record\(s\), 1 not decodable \(skipped\); 4 field\(s\)/);
      expect(run.out).toMatch(/cards\[\]\.number\s+payment-card/);
      expect(run.out).toMatch(/profile\.name\s+person-name/);
      expect(run.out).not.toContain('photo');
      const { readFile } = await import('node:fs/promises');
      const compiled = compileVeilConfigText(await readFile(draft, 'utf8'));
      expect(compiled.issues.filter((i) => i.severity === 'error')).toEqual([]);
      const pipeline = Object.values(compiled.config!.pipelines)[0]!;
      expect(pipeline.format).toBe(format);
      expect(pipeline.fields.map((f) => f.path).sort()).toEqual(['cards[].number', 'email', 'profile.name']);
      expectNoValues(run.out + run.err);
    },
    60_000,
  );

  it('on a PostgreSQL table and on a JSON-lines file', async () => {
    const dir = await tempDir();
    const fromTable = await veil(fakeCliIo(dir, { VEIL_PG_URL: databaseUrl('postgres') }), ['discover', '--table', table, '--sample', '25']);
    expect(fromTable.code, fromTable.err).toBe(0);
    expect(fromTable.out).toMatch(/sampled 25 record\(s\); 3 field\(s\)/);
    expect(fromTable.out).toMatch(/contact_email\s+email/);
    expect(fromTable.out).toMatch(/iban\s+iban/);
    expect(fromTable.out).toMatch(/phone\s+phone/);
    const file = join(dir, 'records.jsonl');
    await writeFile(file, `${Array.from({ length: 9 }, (_, i) => JSON.stringify(demoRecord(i))).join('\n')}\n{not json\n`);
    const fromFile = await veil(fakeCliIo(dir), ['discover', '--file', file, '--draft', '-']);
    expect(fromFile.code, fromFile.err).toBe(0);
    expect(fromFile.out).toMatch(/sampled 9 record\(s\), 1 not JSON \(skipped\); 3 field\(s\)/);
    expect(fromFile.out).toContain('classes:');
    expectNoValues(fromFile.out);
  }, 60_000);

  it('refuses an ambiguous or unreadable source with a usage or source error, never a record', async () => {
    const dir = await tempDir();
    const io = fakeCliIo(dir, { VEIL_PG_URL: databaseUrl('postgres') });
    expect((await veil(io, ['discover'])).code).toBe(2);
    expect((await veil(io, ['discover', '--file', 'a', '--topic', 'b'])).code).toBe(2);
    expect((await veil(io, ['discover', '--file', 'a', '--sample', '0'])).code).toBe(2);
    const injection = await veil(io, ['discover', '--table', 'x; DROP TABLE y']);
    expect(injection).toMatchObject({ code: 1 });
    expect(injection.err).toContain('schema.table');
    const missing = await veil(io, ['discover', '--table', 'no_such_table_here']);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/psql could not read no_such_table_here: .*does not exist/);
    const noTopic = await veil(fakeCliIo(dir, { KAFKA_BROKERS: BROKERS.join(',') }), [
      'discover',
      '--topic',
      `no.such.topic.${randomBytes(3).toString('hex')}`,
    ]);
    expect(noTopic.code).toBe(1);
    expect(noTopic.err).toMatch(/cannot sample: topic no\.such\.topic\.[0-9a-f]+ does not exist/);
    expect((await veil(io, ['discover', '--topic', 't', '--format', 'thrift'])).code).toBe(2);
    expect((await veil(fakeCliIo(dir, {}), ['discover', '--topic', 't', '--format', 'protobuf'])).err).toMatch(/--format protobuf needs --registry/);
    expect((await veil(io, ['discover', '--help'])).code).toBe(0);
  }, 60_000);
});
