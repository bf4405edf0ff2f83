import avro from 'avsc';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { type Chain } from '../../../src/engine/index.ts';
import { arrayOf, avroField, avroRecord, mapOf, nullable } from '../../helpers/avro-schema.ts';
import { chainFrom } from '../../helpers/chain-from.ts';
import { confluentFrame } from '../../helpers/confluent-frame.ts';
import { pipelineIssues, pipelineSchema } from '../../../src/stream/config/pipeline-config.ts';
import { mappings } from '../../../src/stream/serde/field-mappings.ts';
import { avroTaggedFields, avscSchema } from '../../../src/stream/serde/avro/avro-clean-schema.ts';
import { avroSerde } from '../../../src/stream/serde/avro/avro-serde.ts';
import { avroType } from '../../../src/stream/serde/avro/avro-types.ts';
import { jsonSchemaTaggedFields } from '../../../src/stream/serde/json-schema/json-schema-clean.ts';
import { jsonSchemaSerde } from '../../../src/stream/serde/json-schema/json-schema-serde.ts';
import { parseProtoSchema, protoTaggedFields } from '../../../src/stream/serde/protobuf/protobuf-schema.ts';
import { protobufSerde } from '../../../src/stream/serde/protobuf/protobuf-serde.ts';
import { readFraming } from '../../../src/stream/serde/protobuf/protobuf-wire.ts';
import { planTags } from '../../../src/stream/serde/schema-tags.ts';
import type { GuardPlan, RecordProtection } from '../../../src/stream/serde/serde.ts';
import { StreamError } from '../../../src/stream/stream-error.ts';
import { FakeRegistry } from './fake-registry.ts';

const tok = (label: string) => chainFrom((v: string) => `${label}(${v})`);
const guard = (allow: string[] = []): GuardPlan => ({ action: 'dead-letter', allow, protect: new Map(), retypes: false });
/** the pipeline maps `name`, and the tags PII_EMAIL and PCI */
const protection = (options: { guard?: GuardPlan; paths?: string[]; foldKeys?: boolean } = {}): RecordProtection => {
  const paths = options.paths ?? ['name'];
  return {
    maps: mappings(
      paths,
      paths.map(() => tok('name')),
    ),
    missing: 'pass',
    foldKeys: options.foldKeys === true,
    tags: new Map<string, Chain>([
      ['PII_EMAIL', tok('email')],
      ['PCI', tok('card')],
    ]),
    ...(options.guard ? { guard: options.guard } : {}),
  };
};
const TAGS = ['PII_EMAIL', 'PCI'];
const outcome = (r: Buffer | StreamError) => (r instanceof StreamError ? [r.code, r.path, r.kind] : 'clean');

describe('planTags', () => {
  const tagged = [
    { path: 'name', tags: ['PII'], reachable: true },
    { path: 'email', tags: ['PII', 'PII_EMAIL'], reachable: true },
    { path: 'ssn', tags: ['PII'], reachable: true },
    { path: 'attrs.*.email', tags: ['PII'], reachable: false },
  ];
  it('leaves mapped paths to their mapping, maps a field by the first of its tags the pipeline maps, and lists the rest as unmapped', () => {
    expect(planTags(tagged, ['Name'], new Set(TAGS), true)).toEqual({
      mapped: [{ path: 'email', tag: 'PII_EMAIL' }],
      unmapped: [
        { path: 'ssn', tag: 'PII' },
        { path: 'attrs.*.email', tag: 'PII' },
      ],
    });
    // keys: exact: `Name` is not `name`
    expect(planTags(tagged, ['Name'], new Set(TAGS), false).unmapped[0]).toEqual({ path: 'name', tag: 'PII' });
  });
  it('a mapped tag where no path reaches it cannot be protected: the schema is refused, RECORD_MALFORMED', () => {
    expect(() => planTags(tagged, [], new Set(['PII']), false)).toThrow(expect.objectContaining({ code: 'RECORD_MALFORMED', name: 'StreamError' }));
  });
});

describe('Confluent tags in Avro schemas (confluent:tags on a field)', () => {
  const schema = avroRecord(
    'Customer',
    {
      name: avroField('string', { 'confluent:tags': ['PII'] }),
      email: nullable('string', { 'confluent:tags': ['PII', 'PII_EMAIL'], doc: 'where we write' }),
      emails: avroField(arrayOf('string'), { default: [], 'confluent:tags': ['PII_EMAIL'] }),
      cards: avroField(arrayOf(avroRecord('Card', { number: avroField('long', { 'confluent:tags': ['PCI'] }), brand: 'string' })), { default: [] }),
      note: avroField('string', { default: '' }),
    },
    'shop',
  );
  const withSsn = { ...schema, fields: [...schema.fields, { name: 'ssn', type: ['null', 'string'], default: null, 'confluent:tags': ['PII'] }] };
  const record = { name: 'Ann Lee', email: 'ann@example.com', emails: ['a1@example.com'], cards: [{ number: 4111111111111111, brand: 'visa' }], note: 'x' };
  const wire = (id: number, s: object, value: object) => confluentFrame(id, avro.Type.forSchema(s as avro.Schema).toBuffer(value));

  it('lists tagged fields with their pipeline paths; under a map, a union of records or a recursive type they have none', () => {
    expect(avroTaggedFields(JSON.stringify(schema))).toEqual([
      { path: 'name', tags: ['PII'], reachable: true },
      { path: 'email', tags: ['PII', 'PII_EMAIL'], reachable: true },
      { path: 'emails[]', tags: ['PII_EMAIL'], reachable: true },
      { path: 'cards[].number', tags: ['PCI'], reachable: true },
    ]);
    const odd = avroRecord('Node', {
      attrs: mapOf(avroRecord('V', { email: avroField('string', { 'confluent:tags': ['PII'] }) })),
      next: nullable('Node'),
      v: avroField(['null', 'V', avroRecord('W', { x: 'string' })], { default: null }),
    });
    expect(avroTaggedFields(JSON.stringify(odd))).toEqual([
      { path: 'attrs.*.email', tags: ['PII'], reachable: false },
      { path: 'next.*', tags: ['PII'], reachable: false },
      { path: 'v.email', tags: ['PII'], reachable: false },
    ]);
  });

  it("a field tagged with a mapped tag is protected as that tag in the schema's records, retyped to string with its tags kept, and named in the protected paths", async () => {
    const registry = new FakeRegistry();
    const id = registry.add(schema);
    const serde = avroSerde({ registry, protectedPaths: ['name'], tags: TAGS });
    const fields: (string | undefined)[] = [];
    const [out] = await serde.protectMany!([wire(id, schema, record)], protection({ guard: guard() }), ['clean'], fields);
    expect(outcome(out!)).toBe('clean');
    const cleanText = registry.schemas.get((out as Buffer).readUInt32BE(1))!;
    const clean = JSON.parse(cleanText) as { fields: { name: string; type: unknown; 'confluent:tags'?: string[] }[] };
    expect(clean.fields.find((f) => f.name === 'cards')!.type).toMatchObject({
      items: {
        fields: [
          { name: 'number', type: 'string', 'confluent:tags': ['PCI'] },
          { name: 'brand', type: 'string' },
        ],
      },
    });
    expect(clean.fields.find((f) => f.name === 'email')).toEqual({
      name: 'email',
      type: ['null', 'string'],
      default: null,
      'confluent:tags': ['PII', 'PII_EMAIL'],
      doc: 'where we write',
    });
    expect(avroType(avscSchema(cleanText)).fromBuffer((out as Buffer).subarray(5))).toMatchObject({
      name: 'name(Ann Lee)',
      email: 'email(ann@example.com)',
      emails: ['email(a1@example.com)'],
      cards: [{ number: 'card(4111111111111111)', brand: 'visa' }],
      note: 'x',
    });
    expect(fields[0]).toBe('name,email,emails[],cards[].number');
  });

  it('a schema that tags a field the pipeline maps no tag of refuses every record (kind tag:<TAG>), unless the guard allows the path or is off', async () => {
    const registry = new FakeRegistry();
    const id = registry.add(withSsn);
    const serde = avroSerde({ registry, protectedPaths: ['name'], tags: TAGS });
    const bytes = [wire(id, withSsn, { ...record, ssn: null }), wire(id, withSsn, { ...record, ssn: '123-45-6789' })];
    expect((await serde.protectMany!(bytes, protection({ guard: guard() }), ['clean', 'clean'])).map(outcome)).toEqual([
      ['UNMAPPED_PERSONAL_DATA', 'ssn', 'tag:PII'],
      ['UNMAPPED_PERSONAL_DATA', 'ssn', 'tag:PII'],
    ]);
    expect((await serde.protectMany!(bytes, protection({ guard: guard(['ssn']) }), ['clean', 'clean'])).map(outcome)).toEqual(['clean', 'clean']);
    expect((await serde.protectMany!(bytes, protection(), ['clean', 'clean'])).map(outcome)).toEqual(['clean', 'clean']);
  });

  it('a mapped tag where no path reaches it refuses the schema (RECORD_MALFORMED)', async () => {
    const registry = new FakeRegistry();
    const odd = avroRecord('R', { name: 'string', attrs: mapOf(avroRecord('V', { email: avroField('string', { 'confluent:tags': ['PII_EMAIL'] }) })) });
    const id = registry.add(odd);
    const serde = avroSerde({ registry, protectedPaths: ['name'], tags: TAGS });
    const [out] = await serde.protectMany!([wire(id, odd, { name: 'x', attrs: {} })], protection({ guard: guard() }), ['clean']);
    expect((out as StreamError).code).toBe('RECORD_MALFORMED');
    expect((out as StreamError).message).toMatch(/attrs\.\*\.email is tagged PII_EMAIL/);
  });
});

describe('Confluent tags in JSON Schemas (confluent:tags on a property)', () => {
  const schema = {
    type: 'object',
    properties: {
      name: { type: 'string', 'confluent:tags': ['PII'] },
      Email: { type: 'string', 'confluent:tags': ['PII_EMAIL'], description: 'where we write' },
      cards: { type: 'array', items: { $ref: '#/$defs/Card' } },
      phones: { type: 'array', items: { type: 'string' }, 'confluent:tags': ['PII_EMAIL'] },
      extra: { type: 'object', additionalProperties: { type: 'object', properties: { ssn: { type: 'string', 'confluent:tags': ['PII'] } } } },
    },
    $defs: { Card: { type: 'object', properties: { number: { type: 'string', 'confluent:tags': ['PCI'] } } } },
  };
  const wire = (id: number, json: string) => confluentFrame(id, json);

  it('lists tagged properties with their paths (through $ref and items; under additionalProperties none)', () => {
    expect(jsonSchemaTaggedFields(JSON.stringify(schema))).toEqual([
      { path: 'name', tags: ['PII'], reachable: true },
      { path: 'Email', tags: ['PII_EMAIL'], reachable: true },
      { path: 'cards[].number', tags: ['PCI'], reachable: true },
      { path: 'phones[]', tags: ['PII_EMAIL'], reachable: true },
      { path: 'extra.*.ssn', tags: ['PII'], reachable: false },
    ]);
  });

  it('protects the properties of mapped tags (keys folded), keeps their tags in the clean schema, and refuses the schema for a tag it does not map', async () => {
    const registry = new FakeRegistry();
    const id = registry.add(schema);
    const serde = jsonSchemaSerde({ registry, protectedPaths: ['name'], tags: TAGS, foldKeys: true });
    const fields: (string | undefined)[] = [];
    const record = '{"name":"Ann Lee","email":"ann@example.com","cards":[{"number":"4111111111111111"}],"phones":["a@b.ch"],"extra":{}}';
    // extra.*.ssn is tagged PII, which the pipeline does not map
    const refused = await serde.protectMany!([wire(id, record)], protection({ guard: guard(), foldKeys: true }), ['clean'], fields);
    expect(refused.map(outcome)).toEqual([['UNMAPPED_PERSONAL_DATA', 'extra.*.ssn', 'tag:PII']]);
    const [out] = await serde.protectMany!([wire(id, record)], protection({ guard: guard(['extra']), foldKeys: true }), ['clean'], fields);
    expect(outcome(out!)).toBe('clean');
    expect((out as Buffer).subarray(5).toString()).toBe(
      '{"name":"name(Ann Lee)","email":"email(ann@example.com)","cards":[{"number":"card(4111111111111111)"}],"phones":["email(a@b.ch)"],"extra":{}}',
    );
    expect(fields[0]).toBe('name,Email,cards[].number,phones[]');
    const clean = JSON.parse(registry.schemas.get((out as Buffer).readUInt32BE(1))!);
    expect(clean.properties.Email).toEqual({ type: 'string', description: 'where we write', 'confluent:tags': ['PII_EMAIL'] });
    expect(clean.properties.cards.items.properties.number).toEqual({ type: 'string', 'confluent:tags': ['PCI'] });
    expect(clean.properties.extra).toEqual(schema.properties.extra);
  });
});

describe('Confluent tags in Protobuf schemas ((confluent.field_meta).tags)', () => {
  const PROTO = `syntax = "proto3";
package shop;
import "confluent/meta.proto";
message Customer {
  string name = 1 [(confluent.field_meta).tags = "PII"];
  string email = 2 [(confluent.field_meta) = { tags: ["PII", "PII_EMAIL"] }];
  repeated Card cards = 3;
  string note = 4;
  map<string, Card> by_name = 5;
}
message Card {
  fixed64 number = 1 [(confluent.field_meta).tags = "PCI", deprecated = true];
  string brand = 2;
}
`;
  const WITH_SSN = PROTO.replace(
    '  string note = 4;',
    '  string note = 4;\n  string ssn = 6 [(confluent.field_meta).tags = "PII", (confluent.field_meta).tags = "SSN"];',
  );
  const Customer = protobuf.parse(WITH_SSN, { keepCase: true }).root.lookupType('shop.Customer');
  const wire = (id: number, value: object) => {
    return confluentFrame(id, Buffer.from([0]), Customer.encode(Customer.fromObject(value)).finish());
  };
  const record = { name: 'Ann Lee', email: 'ann@example.com', cards: [{ number: '4111111111111111', brand: 'visa' }], note: 'x' };

  it("reads both option forms from .proto text and lists the tagged fields with their paths (a map's values have none)", () => {
    const schema = parseProtoSchema(WITH_SSN);
    expect(protoTaggedFields(schema, schema.messages.get('shop.Customer')!)).toEqual([
      { path: 'name', tags: ['PII'], reachable: true },
      { path: 'email', tags: ['PII', 'PII_EMAIL'], reachable: true },
      { path: 'cards[].number', tags: ['PCI'], reachable: true },
      { path: 'ssn', tags: ['PII', 'SSN'], reachable: true },
      { path: 'by_name.*.number', tags: ['PCI'], reachable: false },
    ]);
  });

  it('reads the tags of a serialized FileDescriptorProto (the extension protobufjs drops), and the clean descriptor keeps them', async () => {
    // FileDescriptorProto { package shop; message Customer { string name = 1 [tags PII]; fixed64 card = 2 [tags PCI] } }
    const W = protobuf.Writer;
    const meta = (tag: string) =>
      W.create()
        .uint32((3 << 3) | 2)
        .string(tag)
        .finish();
    const options = (tag: string) =>
      W.create()
        .uint32((1088 << 3) | 2)
        .bytes(meta(tag))
        .finish();
    const field = (name: string, number: number, type: number, tag: string) =>
      W.create()
        .uint32((1 << 3) | 2)
        .string(name)
        .uint32(3 << 3)
        .uint32(number)
        .uint32(4 << 3)
        .uint32(1)
        .uint32(5 << 3)
        .uint32(type)
        .uint32((8 << 3) | 2)
        .bytes(options(tag))
        .finish();
    const message = W.create()
      .uint32((1 << 3) | 2)
      .string('Customer')
      .uint32((2 << 3) | 2)
      .bytes(field('name', 1, 9, 'PII'))
      .uint32((2 << 3) | 2)
      .bytes(field('card', 2, 6, 'PCI'))
      .finish();
    const file = W.create()
      .uint32((1 << 3) | 2)
      .string('c.proto')
      .uint32((2 << 3) | 2)
      .string('shop')
      .uint32((4 << 3) | 2)
      .bytes(message)
      .uint32((12 << 3) | 2)
      .string('proto3')
      .finish();
    const base64 = Buffer.from(file).toString('base64');
    const schema = parseProtoSchema(base64);
    expect(protoTaggedFields(schema, schema.messages.get('shop.Customer')!)).toEqual([
      { path: 'name', tags: ['PII'], reachable: true },
      { path: 'card', tags: ['PCI'], reachable: true },
    ]);

    const registry = new FakeRegistry();
    const id = registry.add(base64);
    const serde = protobufSerde({ registry, protectedPaths: ['name'], tags: ['PCI', 'PII'] });
    const body = W.create()
      .uint32((1 << 3) | 2)
      .string('Ann Lee')
      .uint32((2 << 3) | 1)
      .fixed64(4111111111111111)
      .finish();
    const p: RecordProtection = {
      ...protection({ guard: guard() }),
      tags: new Map([
        ['PCI', tok('card')],
        ['PII', tok('pii')],
      ]),
    };
    const [out] = await serde.protectMany!([confluentFrame(id, Buffer.from([0]), body)], p, ['clean']);
    const clean = parseProtoSchema(registry.schemas.get(readFraming(out as Buffer).schemaId)!);
    expect(clean.messages.get('shop.Customer')!.fields.map((f) => [f.name, f.kind, f.tags])).toEqual([
      ['name', 'string', ['PII']],
      ['card', 'string', ['PCI']],
    ]);
  });

  it("a mapped tag where no path reaches it (a map's values) refuses the schema: RECORD_MALFORMED naming the place, allowed or not", async () => {
    const registry = new FakeRegistry();
    const id = registry.add(PROTO);
    const serde = protobufSerde({ registry, protectedPaths: ['name'], tags: TAGS });
    for (const p of [protection({ guard: guard(['by_name']) }), protection()]) {
      const [out] = await serde.protectMany!([wire(id, record)], p, ['clean']);
      expect(outcome(out!)).toEqual(['RECORD_MALFORMED', undefined, undefined]);
      expect((out as StreamError).message).toMatch(/by_name\.\*\.number is tagged PCI, which the pipeline maps, where no record path reaches it/);
    }
  });

  it('a schema whose tagged fields the pipeline maps (or allows) passes, protected as the tags say', async () => {
    const registry = new FakeRegistry();
    const plain = PROTO.replace('  map<string, Card> by_name = 5;\n', '');
    const ssn = WITH_SSN.replace('  map<string, Card> by_name = 5;\n', '');
    const id = registry.add(plain);
    const ssnId = registry.add(ssn);
    const serde = protobufSerde({ registry, protectedPaths: ['name'], tags: TAGS });
    const fields: (string | undefined)[] = [];
    const values = [wire(id, record), wire(ssnId, { ...record, ssn: '123-45-6789' })];
    const out = await serde.protectMany!(values, protection({ guard: guard() }), ['clean', 'clean'], fields);
    expect(out.map(outcome)).toEqual(['clean', ['UNMAPPED_PERSONAL_DATA', 'ssn', 'tag:PII']]);
    expect(fields[0]).toBe('name,email,cards[].number');
    // a record without a value at a path does not name it: the header says what was protected in that record
    const partial: (string | undefined)[] = [];
    await serde.protectMany!([wire(id, { name: 'Ann Lee' })], protection({ guard: guard() }), ['clean'], partial);
    expect(partial[0]).toBe('name');
    const cleanText = registry.schemas.get(readFraming(out[0] as Buffer).schemaId)!;
    expect(cleanText).toContain('string number = 1 [(confluent.field_meta).tags = "PCI", deprecated = true];');
    const Clean = protobuf.parse(cleanText, { keepCase: true }).root.lookupType('shop.Customer');
    expect(Clean.toObject(Clean.decode((out[0] as Buffer).subarray(readFraming(out[0] as Buffer).bodyStart)))).toMatchObject({
      name: 'name(Ann Lee)',
      email: 'email(ann@example.com)',
      cards: [{ number: 'card(4111111111111111)', brand: 'visa' }],
      note: 'x',
    });
    // allowed, or no guard: the tagged ssn passes as it is
    expect((await serde.protectMany!(values, protection({ guard: guard(['ssn']) }), ['clean', 'clean'])).map(outcome)).toEqual(['clean', 'clean']);
    expect((await serde.protectMany!(values, protection(), ['clean', 'clean'])).map(outcome)).toEqual(['clean', 'clean']);
  });
});

describe('pipeline configuration: tags', () => {
  const base = {
    source: { topics: ['raw'] },
    sink: { topic: 'clean' },
    deadLetterTopic: 'dlq',
    format: 'protobuf',
    fields: [{ path: 'name', field: 'Customer.name' }],
    roles: ['ingest'],
    rightsEvidences: { Role: 'ingest' },
    processingEvidences: { Action: 'Protect' },
  };
  const isField = (c: string, p: string) => c === 'Customer' && ['name', 'email'].includes(p);
  it('maps tags to configured class.properties, in registry formats only', () => {
    expect(pipelineIssues(pipelineSchema.parse({ ...base, tags: { PII_EMAIL: 'Customer.email' } }), isField)).toEqual([]);
    expect(pipelineIssues(pipelineSchema.parse({ ...base, tags: { PCI: 'Customer.card' } }), isField)).toEqual([
      { severity: 'error', pointer: '/tags/PCI', message: 'Customer.card is not a configured class.property' },
    ]);
    expect(pipelineIssues(pipelineSchema.parse({ ...base, format: 'json', tags: { PII: 'Customer.email' } }), isField).map((i) => i.pointer)).toEqual([
      '/tags',
    ]);
    expect(pipelineSchema.safeParse({ ...base, tags: { 'no spaces': 'Customer.email' } }).success).toBe(false);
  });
});
