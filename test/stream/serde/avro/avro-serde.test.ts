import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { chainFrom } from '../../../helpers/chain-from.ts';
import { avscSchema } from '../../../../src/stream/serde/avro/avro-clean-schema.ts';
import { avroSerde } from '../../../../src/stream/serde/avro/avro-serde.ts';
import { avroType } from '../../../../src/stream/serde/avro/avro-types.ts';
import { FakeRegistry } from '../fake-registry.ts';
import { arrayOf, avroRecord, mapOf, nullable } from '../../../helpers/avro-schema.ts';
import { confluentFrame } from '../../../helpers/confluent-frame.ts';
import { streamFailure } from '../../../helpers/stream-failure.ts';

const address = avroRecord('Address', { postcode: 'int', city: 'string' });
const card = avroRecord('Card', { number: 'long', expiry: 'string' });
const rawSchema = avroRecord(
  'Customer',
  {
    id: 'long',
    email: 'string',
    nickname: nullable('string'),
    address: nullable(address),
    cards: arrayOf(card),
    // unmapped, and must come out exactly as they went in
    score: ['int', 'long'],
    avatar: nullable('bytes'),
    attributes: mapOf('double'),
    tier: { type: 'enum', name: 'Tier', symbols: ['GOLD', 'SILVER'] },
    createdNanos: 'long',
    ratio: 'float',
  },
  'acme',
);
const PATHS = ['email', 'nickname', 'address.postcode', 'cards[].number'];
const rawType = avro.Type.forSchema(rawSchema as avro.Schema);

function record(overrides: Record<string, unknown> = {}) {
  return {
    id: 42,
    email: 'ann@example.com',
    nickname: 'annie',
    address: { postcode: 3011, city: 'Bern' },
    cards: [
      { number: 4111111111111111, expiry: '12/30' },
      { number: 5500000000000004, expiry: '01/29' },
    ],
    score: { long: 7 },
    avatar: Buffer.from([1, 2, 3]),
    attributes: { a: 1.5 },
    tier: 'GOLD',
    createdNanos: 0,
    ratio: 0.5,
    ...overrides,
  };
}

/** Confluent wire format as a producer writes it */
function wire(id: number, type: avro.Type, value: unknown): Buffer {
  return confluentFrame(id, type.toBuffer(value));
}

/** what the pipeline does between decode and encode: every mapped field becomes a token */
function protect(value: Record<string, unknown>) {
  const v = value as { email: string; nickname: string | null; address: { postcode: unknown } | null; cards: { number: unknown }[] };
  v.email = `tok(${v.email})`;
  if (v.nickname !== null) v.nickname = `tok(${v.nickname})`;
  if (v.address) v.address.postcode = `tok(${String(v.address.postcode)})`;
  for (const c of v.cards) c.number = `tok(${String(c.number)})`;
}

describe('avroSerde', () => {
  it('round-trips through decode → protect → encode with the clean schema registered for the clean topic', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(rawSchema);
    const serde = avroSerde({ registry, protectedPaths: PATHS });

    const decoded = await serde.decode(wire(rawId, rawType, record()));
    expect(decoded.schemaId).toBe(rawId);
    const value = decoded.value as Record<string, unknown>;
    // unions are plain values: the pipeline reads and writes them at record paths
    expect(value.nickname).toBe('annie');
    expect(value.address).toEqual({ postcode: 3011, city: 'Bern' });
    protect(value);

    const out = await serde.encode(decoded, 'clean.customers');
    expect(out[0]).toBe(0);
    const cleanId = out.readUInt32BE(1);
    expect(registry.subjects.get('clean.customers-value')).toEqual([cleanId]);
    const cleanType = avro.Type.forSchema(JSON.parse(registry.schemas.get(cleanId)!));
    const back = cleanType.fromBuffer(out.subarray(5)) as Record<string, unknown>;
    expect(back).toEqual({
      ...record(),
      email: 'tok(ann@example.com)',
      nickname: 'tok(annie)',
      address: { postcode: 'tok(3011)', city: 'Bern' },
      cards: [
        { number: 'tok(4111111111111111)', expiry: '12/30' },
        { number: 'tok(5500000000000004)', expiry: '01/29' },
      ],
      // the ambiguous union stays wrapped, in the branch it was written with
      score: { long: 7 },
    });
  });

  it('decodes the clean bytes again (the clean schema fits the same paths)', async () => {
    const registry = new FakeRegistry();
    const serde = avroSerde({ registry, protectedPaths: PATHS });
    const decoded = await serde.decode(wire(registry.add(rawSchema), rawType, record({ nickname: null, address: null })));
    protect(decoded.value as Record<string, unknown>);
    const again = await serde.decode(await serde.encode(decoded, 'clean'));
    expect(again.value).toMatchObject({ email: 'tok(ann@example.com)', nickname: null, address: null });
  });

  it('keeps longs beyond 2^53 exact, as bigints', async () => {
    const registry = new FakeRegistry();
    const serde = avroSerde({ registry, protectedPaths: ['cards[].number'] });
    const big = 1_700_000_000_123_456_789n;
    const bigLong = avro.types.LongType.__with({
      fromBuffer: (b: Buffer) => b.readBigInt64LE(),
      toBuffer: (n: bigint) => {
        const b = Buffer.alloc(8);
        b.writeBigInt64LE(n);
        return b;
      },
      fromJSON: BigInt,
      toJSON: Number,
      isValid: (n: unknown) => typeof n === 'bigint',
      compare: () => 0,
    });
    const writer = avro.Type.forSchema(rawSchema as avro.Schema, { registry: { long: bigLong } });
    const value = { ...record(), id: 42n, createdNanos: big, cards: [{ number: 9_007_199_254_740_993n, expiry: 'x' }], score: 7n };
    const decoded = await serde.decode(wire(registry.add(rawSchema), writer, value));
    const v = decoded.value as { id: unknown; createdNanos: unknown; cards: { number: unknown }[] };
    expect(v.id).toBe(42); // safe: a number
    expect(v.createdNanos).toBe(big);
    expect(v.cards[0]!.number).toBe(9_007_199_254_740_993n);
    v.cards[0]!.number = String(v.cards[0]!.number);
    const out = await serde.encode(decoded, 'clean');
    const cleanWriter = avro.Type.forSchema(JSON.parse(registry.latest('clean-value')), { registry: { long: bigLong } });
    const back = cleanWriter.fromBuffer(out.subarray(5)) as typeof v;
    expect(back.createdNanos).toBe(big);
    expect(back.cards[0]!.number).toBe('9007199254740993');
  });

  it('reads a raw schema whose long defaults reach 2^63 − 1, and registers a clean text that keeps every default as written', async () => {
    const registry = new FakeRegistry();
    const fields = [
      '{"name":"id","type":"long","default":9223372036854775807}',
      '{"name":"email","type":"string","default":"x@y.ch"}',
      '{"name":"serial","type":["long","null"],"default":9007199254740993}',
      '{"name":"limits","type":{"type":"array","items":"long"},"default":[-9223372036854775808,9223372036854775807]}',
      '{"name":"ratio","type":"double","default":1.0}',
    ];
    const text = (f: string[]) => `{"type":"record","name":"Big","namespace":"acme","fields":[${f.join(',')}]}`;
    const rawId = registry.add(text(fields));
    const serde = avroSerde({ registry, protectedPaths: ['email', 'id'] });
    const writer = avroType(avscSchema(text(fields)));
    const decoded = await serde.decode(wire(rawId, writer, { id: 2n ** 63n - 1n, email: 'a@b.ch', serial: null, limits: [], ratio: 2 }));
    const v = decoded.value as { id: unknown; email: unknown };
    expect(v.id).toBe(2n ** 63n - 1n);
    v.id = String(v.id);
    v.email = 'tok';
    const out = await serde.encode(decoded, 'clean');
    expect(registry.latest('clean-value')).toBe(text(['{"name":"id","type":"string","default":"9223372036854775807"}', fields[1]!, ...fields.slice(2)]));
    expect(avroType(avscSchema(registry.latest('clean-value'))).fromBuffer(out.subarray(5))).toEqual({
      id: '9223372036854775807',
      email: 'tok',
      serial: null,
      limits: [],
      ratio: 2,
    });
  });

  it('costs no registry call for repeated records, and shares the first lookups', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(rawSchema);
    const serde = avroSerde({ registry, protectedPaths: PATHS });
    const bytes = wire(rawId, rawType, record());
    const decoded = await Promise.all(Array.from({ length: 50 }, () => serde.decode(bytes)));
    for (const d of decoded) protect(d.value as Record<string, unknown>);
    await Promise.all(decoded.map((d) => serde.encode(d, 'clean')));
    for (let i = 0; i < 50; i++) {
      const d = await serde.decode(bytes);
      protect(d.value as Record<string, unknown>);
      await serde.encode(d, 'clean');
    }
    expect(registry.calls).toEqual({ schemaById: 1, register: 1 });
  });

  it('registers a new clean version for a new raw schema version, and one clean schema per clean topic', async () => {
    const registry = new FakeRegistry();
    const v1 = registry.add(rawSchema);
    const rawV2 = { ...rawSchema, fields: [...rawSchema.fields, { name: 'phone', type: ['null', 'string'], default: null }] };
    const v2 = registry.add(rawV2);
    const serde = avroSerde({ registry, protectedPaths: PATHS });
    const protectedBytes = async (bytes: Buffer, topic: string) => {
      const d = await serde.decode(bytes);
      protect(d.value as Record<string, unknown>);
      return serde.encode(d, topic);
    };
    const a = await protectedBytes(wire(v1, rawType, record()), 'clean');
    const b = await protectedBytes(wire(v2, avro.Type.forSchema(rawV2 as avro.Schema), { ...record(), phone: '+41 79' }), 'clean');
    await protectedBytes(wire(v1, rawType, record()), 'other');
    expect(registry.subjects.get('clean-value')).toEqual([a.readUInt32BE(1), b.readUInt32BE(1)]);
    expect(a.readUInt32BE(1)).not.toBe(b.readUInt32BE(1));
    expect(registry.subjects.get('other-value')).toEqual([a.readUInt32BE(1)]);
    expect(JSON.parse(registry.latest('clean-value')).fields.at(-1)).toEqual({ name: 'phone', type: ['null', 'string'], default: null });
  });

  describe('decode failures', () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(rawSchema);
    const serde = avroSerde({ registry, protectedPaths: PATHS });
    const good = wire(rawId, rawType, record());

    it('a buffer shorter than the header', async () => {
      expect((await streamFailure(serde.decode(Buffer.from([0, 0, 0])))).code).toBe('RECORD_MALFORMED');
    });
    it('a wrong magic byte (JSON, say)', async () => {
      const e = await streamFailure(serde.decode(Buffer.from('{"email":"ann@example.com"}')));
      expect(e.code).toBe('RECORD_MALFORMED');
      expect(e.message).toMatch(/magic byte/);
      expect(e.message).not.toContain('ann');
    });
    it('bytes that do not decode with the schema: truncated, trailing data, a bad union index', async () => {
      for (const bytes of [good.subarray(0, good.length - 3), Buffer.concat([good, Buffer.from([7])]), Buffer.from([0, 0, 0, 0, rawId, 2, 2, 0x41, 30])]) {
        const e = await streamFailure(serde.decode(bytes));
        expect(e.code).toBe('RECORD_MALFORMED');
        expect(e.message).toBe(`the value does not decode with its schema ${rawId}`);
      }
    });
    it('an id the registry does not hold', async () => {
      const e = await streamFailure(serde.decode(wire(9999, rawType, record())));
      expect(e.code).toBe('SCHEMA_UNKNOWN');
      expect(e.retriable).toBe(false);
    });
    it('a schema that is not Avro', async () => {
      const id = registry.add('syntax = "proto3"; message M { string email = 1; }', 'proto-value');
      expect((await streamFailure(serde.decode(wire(id, rawType, record())))).message).toMatch(/not an Avro schema/);
    });
    it('a schema whose shape contradicts a protected path, before anything is protected', async () => {
      const s = avroSerde({ registry, protectedPaths: ['email', 'address.city.first'] });
      const e = await streamFailure(s.decode(good));
      expect(e.code).toBe('RECORD_MALFORMED');
      expect(e.message).toBe(`schema ${rawId} does not fit the pipeline's mapped paths: address.city.first: address.city is a string, not a record`);
    });
  });

  it('refuses a schema without a mapped path (a typo, a rename, an older version): SCHEMA_PATH_UNKNOWN naming the first such path in mapping order, never a value', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(rawSchema);
    const bytes = wire(rawId, rawType, record());
    for (const [paths, path] of [
      [[...PATHS, 'address.country', 'phone'], 'address.country'],
      [['Email'], 'Email'],
      [['email', 'cards[].expMonth'], 'cards[].expMonth'],
    ] as const) {
      const serde = avroSerde({ registry, protectedPaths: paths });
      const e = await streamFailure(serde.decode(bytes));
      expect([e.code, e.path, e.schema, e.retriable]).toEqual(['SCHEMA_PATH_UNKNOWN', path, rawId, false]);
      expect(e.message).toContain(`schema ${rawId} has no field at the mapped path ${path}`);
      expect(e.message).not.toContain('ada');
    }
    // the registry is asked once per schema id, refused or not
    const serde = avroSerde({ registry, protectedPaths: ['phone'] });
    const calls = registry.calls.schemaById;
    for (let i = 0; i < 3; i++) await streamFailure(serde.decode(bytes));
    expect(registry.calls.schemaById - calls).toBe(1);
  });

  it('passes a registry outage on as retriable, and asks again next time', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(rawSchema);
    const serde = avroSerde({ registry, protectedPaths: PATHS });
    registry.down = true;
    const bytes = wire(rawId, rawType, record());
    const e = await streamFailure(serde.decode(bytes));
    expect([e.code, e.retriable]).toEqual(['REGISTRY_UNAVAILABLE', true]);
    registry.down = false;
    const decoded = await serde.decode(bytes);
    registry.down = true;
    expect((await streamFailure(serde.encode(decoded, 'clean'))).code).toBe('REGISTRY_UNAVAILABLE');
    registry.down = false;
    protect(decoded.value as Record<string, unknown>);
    expect((await serde.encode(decoded, 'clean'))[0]).toBe(0);
  });

  it('refuses to encode a value that does not match the clean schema, naming the field, not the value', async () => {
    const registry = new FakeRegistry();
    const serde = avroSerde({ registry, protectedPaths: PATHS });
    const decoded = await serde.decode(wire(registry.add(rawSchema), rawType, record()));
    protect(decoded.value as Record<string, unknown>);
    (decoded.value as { cards: { expiry: unknown }[] }).cards[1]!.expiry = 1229;
    const e = await streamFailure(serde.encode(decoded, 'clean'));
    expect(e.code).toBe('RECORD_MALFORMED');
    expect(e.message).toMatch(/at cards\.1\.expiry$/);
    expect(e.message).not.toContain('1229');
  });
});

describe('avroSerde keeps every unmapped datum byte for byte', () => {
  const schema = avroRecord(
    'Wide',
    {
      email: 'string',
      at: { type: 'long', logicalType: 'timestamp-millis' },
      atMicros: { type: 'long', logicalType: 'timestamp-micros' },
      day: { type: 'int', logicalType: 'date' },
      amount: { type: 'bytes', logicalType: 'decimal', precision: 20, scale: 4 },
      fixedAmount: { type: 'fixed', name: 'Money', size: 8, logicalType: 'decimal', precision: 18, scale: 2 },
      uid: { type: 'string', logicalType: 'uuid' },
      max: 'long',
      min: 'long',
      negZero: 'double',
      tiny: 'float',
      labels: mapOf('string'),
      maybe: ['null', 'long'],
    },
    'acme',
  );
  const EMAIL = 'ann@example.com';
  // written by hand in Avro binary after the email, so nothing in it went through avsc's writer
  const zigzag = (n: bigint) => {
    let z = n >= 0n ? n << 1n : (-n << 1n) - 1n;
    const out: number[] = [];
    while (z >= 0x80n) {
      out.push(Number((z & 0x7fn) | 0x80n));
      z >>= 7n;
    }
    out.push(Number(z));
    return Buffer.from(out);
  };
  const str = (s: string) => Buffer.concat([zigzag(BigInt(Buffer.byteLength(s))), Buffer.from(s)]);
  const bytes = (b: Buffer) => Buffer.concat([zigzag(BigInt(b.length)), b]);
  const negZero = Buffer.alloc(8);
  negZero.writeDoubleLE(-0);
  const tiny = Buffer.alloc(4);
  tiny.writeFloatLE(1.401298464324817e-45);
  const rest = Buffer.concat([
    zigzag(1_795_000_000_123n),
    zigzag(1_795_000_000_123_456n),
    zigzag(20_000n),
    bytes(Buffer.from([0x00, 0xff, 0x12, 0x34, 0x56])),
    Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x0c]),
    str('123e4567-e89b-12d3-a456-426614174000'),
    zigzag(2n ** 63n - 1n),
    zigzag(-(2n ** 63n)),
    negZero,
    tiny,
    // a map block with keys in an order a JS object would change ("b" before "1")
    zigzag(2n),
    str('b'),
    str('x'),
    str('1'),
    str('y'),
    zigzag(0n),
    zigzag(1n),
    zigzag(9_007_199_254_740_993n),
  ]);

  it('replaces the mapped field and leaves the rest of the Avro binary identical', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(schema);
    const serde = avroSerde({ registry, protectedPaths: ['email'] });
    const raw = confluentFrame(rawId, str(EMAIL), rest);
    const clean = await serde.protect(
      raw,
      { maps: [{ path: 'email', compiled: [{ name: 'email', each: false }], transform: chainFrom((s) => `tok(${s})`) }], missing: 'pass' },
      'clean.wide',
    );
    const token = str(`tok(${EMAIL})`);
    expect(clean.subarray(5, 5 + token.length)).toEqual(token);
    expect(clean.subarray(5 + token.length).toString('hex')).toBe(rest.toString('hex'));
  });
});
