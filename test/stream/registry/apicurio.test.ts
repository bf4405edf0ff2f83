import { createServer } from 'node:net';
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import type { SchemaRegistryPort } from '../../../src/stream/registry/registry-port.ts';
import { CachingRegistry } from '../../../src/stream/registry/caching-registry.ts';
import { confluentRegistry } from '../../../src/stream/registry/confluent-registry.ts';
import { RetryingRegistry } from '../../../src/stream/registry/retrying-registry.ts';
import { avroSerde } from '../../../src/stream/serde/avro/avro-serde.ts';
import { arrayOf, avroRecord, nullable } from '../../helpers/avro-schema.ts';
import { chainFrom } from '../../helpers/chain-from.ts';
import { confluentFrame } from '../../helpers/confluent-frame.ts';
import { mappings } from '../../../src/stream/serde/field-mappings.ts';
import { jsonSchemaSerde } from '../../../src/stream/serde/json-schema/json-schema-serde.ts';
import { streamFailure } from '../../helpers/stream-failure.ts';

/**
 * Against the real registry (Apicurio Registry's Confluent API, or Confluent's): SCHEMA_REGISTRY_URL,
 * set by vitest's global setup. Subjects are unique per run, since the registry outlives runs.
 */
const url = process.env.SCHEMA_REGISTRY_URL!;
const run = `veil-test-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

const address = avroRecord('Address', { postcode: 'int', city: 'string' });
const rawV1 = avroRecord(
  'Customer',
  { id: 'long', email: 'string', address: nullable(address), cards: arrayOf(avroRecord('Card', { number: 'long' })) },
  'acme.raw',
);
const rawV2 = { ...rawV1, fields: [...rawV1.fields, { name: 'phone', type: ['null', 'string'], default: null }] };
const PATHS = ['email', 'address.postcode', 'cards[].number'];

function wire(id: number, schema: unknown, value: unknown): Buffer {
  return confluentFrame(id, avro.Type.forSchema(schema as avro.Schema).toBuffer(value));
}

async function versions(subject: string): Promise<number[]> {
  const res = await fetch(`${url}/subjects/${encodeURIComponent(subject)}/versions`);
  return (await res.json()) as number[];
}

/** counts the calls that reach the registry */
function counting(inner: SchemaRegistryPort) {
  const calls = { schemaById: 0, register: 0 };
  const port: SchemaRegistryPort = {
    schemaById: (id) => (calls.schemaById++, inner.schemaById(id)),
    register: (s, t, type) => (calls.register++, inner.register(s, t, type)),
  };
  return { port, calls };
}

describe('confluentRegistry against the real registry', () => {
  const registry = confluentRegistry(url);

  it('registers a schema, idempotently, and returns its text by id', async () => {
    const text = JSON.stringify(rawV1);
    const id = await registry.register(`${run}.a-value`, text);
    expect(Number.isInteger(id)).toBe(true);
    expect(await registry.register(`${run}.a-value`, text)).toBe(id);
    expect(await versions(`${run}.a-value`)).toEqual([1]);
    expect(await registry.schemaById(id)).toBe(text);
    // the same schema under another subject: the same (global) id
    expect(await registry.register(`${run}.b-value`, text)).toBe(id);
  });

  it("answers a subject's latest version (veil config validate), and undefined for a subject it does not hold", async () => {
    const first = await registry.register(`${run}.latest-value`, JSON.stringify(rawV1));
    const second = await registry.register(`${run}.latest-value`, JSON.stringify(rawV2));
    expect(await registry.latestVersion!(`${run}.latest-value`)).toEqual({ id: second, version: 2, schema: JSON.stringify(rawV2), schemaType: 'AVRO' });
    expect(first).not.toBe(second);
    expect(await registry.latestVersion!(`${run}.none-value`)).toBeUndefined();
  });

  it('an unknown id is SCHEMA_UNKNOWN', async () => {
    const e = await streamFailure(registry.schemaById(2_000_000_000));
    expect([e.code, e.retriable]).toEqual(['SCHEMA_UNKNOWN', false]);
    expect(e.message).toContain('error_code 40403');
  });

  it('a schema the registry cannot parse is refused, not retried', async () => {
    const e = await streamFailure(registry.register(`${run}.bad-value`, '{"type":"record","name":"X"}'));
    expect([e.code, e.retriable]).toEqual(['SCHEMA_UNKNOWN', false]);
    expect(e.message).toMatch(/HTTP 422, error_code 42201/);
  });

  it('an unreachable registry (a closed port) is REGISTRY_UNAVAILABLE', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise((r) => probe.close(r));
    const closed = confluentRegistry(`http://127.0.0.1:${port}/apis/ccompat/v7`);
    for (const call of [closed.schemaById(1), closed.register(`${run}.x-value`, '"string"')]) {
      const e = await streamFailure(call);
      expect([e.code, e.retriable]).toEqual(['REGISTRY_UNAVAILABLE', true]);
      expect(e.message).toMatch(/connection refused/);
    }
  });

  it('a wrong base URL (not the Confluent API) is REGISTRY_UNAVAILABLE, not SCHEMA_UNKNOWN', async () => {
    const e = await streamFailure(confluentRegistry(url.replace(/\/apis\/ccompat\/v7$/, '/apis/nope')).schemaById(1));
    expect(e.code).toBe('REGISTRY_UNAVAILABLE');
  });
});

describe('avroSerde through the real registry', () => {
  it('protects, registers the clean schema, and registers a new clean version when the raw schema evolves', async () => {
    const raw = `${run}.customers`;
    const clean = `${run}.customers.clean`;
    const { port, calls } = counting(new CachingRegistry(new RetryingRegistry(confluentRegistry(url))));
    const serde = avroSerde({ registry: port, protectedPaths: PATHS });
    const producer = confluentRegistry(url);
    const v1 = await producer.register(`${raw}-value`, JSON.stringify(rawV1));

    const record = { id: 1, email: 'ann@example.com', address: { postcode: 3011, city: 'Bern' }, cards: [{ number: 4111111111111111 }] };
    const protectOne = async (bytes: Buffer) => {
      const d = await serde.decode(bytes);
      const v = d.value as { email: string; address: { postcode: unknown } | null; cards: { number: unknown }[]; phone?: string | null };
      v.email = `tok:${v.email.length}`;
      if (v.address) v.address.postcode = 'tok:pc';
      for (const c of v.cards) c.number = 'tok:card';
      if (typeof v.phone === 'string') v.phone = 'tok:phone';
      return serde.encode(d, clean);
    };

    const out1 = await protectOne(wire(v1, rawV1, record));
    const cleanV1 = out1.readUInt32BE(1);
    expect(cleanV1).not.toBe(v1);
    expect(await versions(`${clean}-value`)).toEqual([1]);
    const cleanSchema1 = JSON.parse(await producer.schemaById(cleanV1));
    expect(cleanSchema1.fields.map((f: { type: unknown }) => f.type)).toEqual([
      'long',
      'string',
      ['null', avroRecord('Address', { postcode: 'string', city: 'string' }, 'acme.raw')],
      arrayOf(avroRecord('Card', { number: 'string' }, 'acme.raw')),
    ]);
    expect(avro.Type.forSchema(cleanSchema1).fromBuffer(out1.subarray(5))).toEqual({
      id: 1,
      email: 'tok:15',
      address: { postcode: 'tok:pc', city: 'Bern' },
      cards: [{ number: 'tok:card' }],
    });

    // the clean subject may be held to Confluent's default compatibility: v2 only adds an optional field
    const config = await fetch(`${url}/config/${encodeURIComponent(`${clean}-value`)}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ compatibility: 'BACKWARD' }),
    });
    expect(config.status).toBe(200);

    const v2 = await producer.register(`${raw}-value`, JSON.stringify(rawV2));
    expect(v2).not.toBe(v1);
    const out2 = await protectOne(wire(v2, rawV2, { ...record, phone: '+41 79 000 00 00' }));
    const cleanV2 = out2.readUInt32BE(1);
    expect(cleanV2).not.toBe(cleanV1);
    expect(await versions(`${clean}-value`)).toEqual([1, 2]);
    const cleanSchema2 = JSON.parse(await producer.schemaById(cleanV2));
    expect(cleanSchema2.fields.at(-1)).toEqual({ name: 'phone', type: ['null', 'string'], default: null });
    expect(avro.Type.forSchema(cleanSchema2).fromBuffer(out2.subarray(5))).toMatchObject({ phone: 'tok:phone' });

    // a mapping that names v2's phone refuses v1, which lacks it, rather than pass it unchecked
    const withPhone = avroSerde({ registry: confluentRegistry(url), protectedPaths: [...PATHS, 'phone'] });
    const refused = await streamFailure(withPhone.decode(wire(v1, rawV1, record)));
    expect([refused.code, refused.path, refused.schema]).toEqual(['SCHEMA_PATH_UNKNOWN', 'phone', v1]);
    await withPhone.decode(wire(v2, rawV2, { ...record, phone: null }));

    // records of both versions keep flowing without asking the registry again
    const before = { ...calls };
    for (let i = 0; i < 20; i++) {
      expect((await protectOne(wire(v1, rawV1, record))).readUInt32BE(1)).toBe(cleanV1);
      expect((await protectOne(wire(v2, rawV2, { ...record, phone: null }))).readUInt32BE(1)).toBe(cleanV2);
    }
    expect(calls).toEqual(before);
    expect(before).toEqual({ schemaById: 2, register: 2 });

    // a restarted serde derives the same clean schema: the registry returns the same id, no new version
    const restarted = avroSerde({ registry: confluentRegistry(url), protectedPaths: PATHS });
    const d = await restarted.decode(wire(v1, rawV1, record));
    (d.value as { email: string }).email = 'tok';
    (d.value as { address: { postcode: unknown } }).address.postcode = 'tok';
    (d.value as { cards: { number: unknown }[] }).cards[0]!.number = 'tok';
    expect((await restarted.encode(d, clean)).readUInt32BE(1)).toBe(cleanV1);
    expect(await versions(`${clean}-value`)).toEqual([1, 2]);
  });
});

describe('jsonSchemaSerde against the real registry', () => {
  it('reads a JSON Schema a producer registered (schemaType JSON) and registers the clean one as JSON; the record text changes only at the mapped values', async () => {
    const raw = `${run}.json.customers`;
    const clean = `${run}.json.customers.clean`;
    const schema = {
      type: 'object',
      properties: {
        id: { type: 'integer' },
        email: { type: 'string', format: 'email' },
        cards: { type: 'array', items: { type: 'object', properties: { number: { type: 'string' } } } },
      },
      required: ['id'],
    };
    const put = await fetch(`${url}/subjects/${encodeURIComponent(`${raw}-value`)}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schemaType: 'JSON', schema: JSON.stringify(schema) }),
    });
    expect(put.status).toBe(200);
    const rawId = ((await put.json()) as { id: number }).id;
    const paths = ['email', 'cards[].number'];
    const serde = jsonSchemaSerde({ registry: new CachingRegistry(new RetryingRegistry(confluentRegistry(url))), protectedPaths: paths });
    const text = '{"id":1,"email":"ann@example.com","cards":[{"number":"4111111111111111"}],"extra":[1.50,true]}';
    const out = await serde.protect(
      confluentFrame(rawId, text),
      {
        maps: mappings(
          paths,
          paths.map(() => chainFrom((v: string) => `tok:${v.length}`)),
        ),
        missing: 'pass',
      },
      clean,
    );
    expect(out.subarray(5).toString()).toBe('{"id":1,"email":"tok:15","cards":[{"number":"tok:16"}],"extra":[1.50,true]}');
    const cleanId = out.readUInt32BE(1);
    const stored = (await (await fetch(`${url}/schemas/ids/${cleanId}`)).json()) as { schema: string; schemaType?: string };
    expect(stored.schemaType).toBe('JSON');
    const cleanSchema = JSON.parse(stored.schema);
    expect(cleanSchema.properties.email).toEqual({ type: 'string' });
    expect(cleanSchema.properties.cards.items.properties.number).toEqual({ type: 'string' });
    expect(cleanSchema.required).toEqual(['id']);
    expect(await versions(`${clean}-value`)).toEqual([1]);
  });
});
