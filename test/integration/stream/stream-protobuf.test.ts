import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPython } from '../../helpers/confluent-python.ts';
import { BROKERS, REGISTRY_URL, consume, kafkaClient, produce, topicsFor } from '../../helpers/kafka.ts';
import { startedPipeline, unprotector } from '../../helpers/stream.ts';

const FIXTURES = join(import.meta.dirname, '../../fixtures/protobuf');

interface Clean {
  partition: number;
  offset: number;
  key: string;
  schema_id: number;
  value: { id: string; email: string; cards: { number: string; brand: string }[]; profile?: { name: string; tier?: number }; phone?: string };
  unknown: [number, number][];
  bytes: string;
}

/** What protobuf_interop.py's customer(i) writes. */
const customer = (i: number) => ({
  email: `pb${i}@example.com`,
  card: String(4111111111110000n + BigInt(i)),
  profile: i % 5 === 0 ? undefined : { name: `Pb Person ${i}`, tier: i % 3 },
  phone: `+4420${String(i).padStart(7, '0')}`,
});

/**
 * The fields of a message's bytes, by a reader written here (not veil's): number → the exact
 * bytes of each occurrence, tag included, in order.
 */
function fieldsOf(b: Buffer): [number, Buffer][] {
  const out: [number, Buffer][] = [];
  const varint = (p: number): [number, number] => {
    let v = 0;
    for (let s = 1; ; s *= 128) {
      const byte = b[p++]!;
      v += (byte & 127) * s;
      if (byte < 128) return [v, p];
    }
  };
  for (let pos = 0; pos < b.length;) {
    const start = pos;
    const [tag, p] = varint(pos);
    const type = tag % 8;
    const end =
      type === 0
        ? varint(p)[1]
        : type === 1
          ? p + 8
          : type === 5
            ? p + 4
            : (() => {
                const [len, q] = varint(p);
                return q + len;
              })();
    out.push([Math.floor(tag / 8), b.subarray(start, end)]);
    pos = end;
  }
  return out;
}

/** the message bytes after the framing [0, id, indexes [1] = 0x02 0x02] */
const body = (hex: string) => {
  const b = Buffer.from(hex, 'hex');
  expect([...b.subarray(5, 7)]).toEqual([2, 2]);
  return b.subarray(7);
};
const without = (b: Buffer, numbers: number[]) =>
  Buffer.concat(
    fieldsOf(b)
      .filter(([n]) => !numbers.includes(n))
      .map(([, bytes]) => bytes),
  );

/**
 * The protobuf format end to end with confluent-kafka's (Python) own serializers on both sides:
 * ProtobufSerializer writes the raw records and registers their schema (a serialized
 * FileDescriptorProto), a second schema version adds a field (evolution), some records carry a
 * field their schema does not know; veil protects them on a real broker with a real registry;
 * ProtobufDeserializer reads the clean topic (read_committed) with message classes built from
 * the clean schemas veil registered. Counted by record id; unmapped bytes compared byte for byte.
 */
describe('stream: Protobuf pipeline with confluent-kafka (Python) serializers', () => {
  const t = topicsFor('protobuf-py');
  const kafka = kafkaClient();
  let pipeline: Awaited<ReturnType<typeof startedPipeline>>;

  beforeAll(async () => {
    // v2's phone is unmapped personal data: the guard would dead-letter its records; this test follows it through in clear
    pipeline = await startedPipeline(kafka, t, 'protobuf', '    unmapped: { allow: [phone] }');
  }, 120_000);
  afterAll(async () => pipeline?.close());

  it('Python ProtobufSerializer (two schema versions) → veil → Python ProtobufDeserializer: every record once, values unprotect, unmapped bytes and unknown fields kept', async () => {
    const write = async (proto: string, first: number, count: number) => {
      const lines = (
        await runPython('protobuf_interop.py', [
          'produce',
          BROKERS.join(','),
          REGISTRY_URL,
          t.raw,
          join(FIXTURES, proto),
          'Customer',
          String(first),
          String(count),
          '10',
        ])
      )
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { id?: number; bytes?: string; schema_id?: number });
      return { schemaId: lines.at(-1)!.schema_id!, raw: new Map(lines.filter((l) => l.id !== undefined).map((l) => [l.id!, l.bytes!])) };
    };
    const v1 = await write('customer_v1.proto', 0, 80);
    const v2 = await write('customer_v2.proto', 80, 20);
    expect(v2.schemaId).not.toBe(v1.schemaId);
    const header = Buffer.from([0, 0, 0, 0, 0, 2, 2]);
    header.writeUInt32BE(v1.schemaId, 1);
    await produce(kafka, t.raw, [
      { key: 'bad-magic', value: Buffer.from('{"email":"x@example.com"}') },
      { key: 'truncated', value: Buffer.concat([header, Buffer.from([0x12, 0x20, 0x61])]) },
      { key: 'unknown-id', value: Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0, 0]), Buffer.from([0x08, 0x01])]) },
    ]);

    const out = await runPython('protobuf_interop.py', ['consume', BROKERS.join(','), REGISTRY_URL, t.clean, 'Customer', '100', '120'], { timeout: 180_000 });
    const lines = out
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Clean);
    const ids = lines.map((l) => Number(l.value.id ?? 0)); // proto3 JSON leaves a 0 out
    expect({ records: lines.length, unique: new Set(ids).size, min: Math.min(...ids), max: Math.max(...ids) }).toEqual({
      records: 100,
      unique: 100,
      min: 0,
      max: 99,
    });
    const dead = await consume(kafka, t.dlq, 3);
    expect(dead.map((d) => `${d.key}:${d.headers['veil.error.code']}`).sort()).toEqual([
      'bad-magic:RECORD_MALFORMED',
      'truncated:RECORD_MALFORMED',
      'unknown-id:SCHEMA_UNKNOWN',
    ]);

    const cleanIds = [...new Set(lines.map((l) => l.schema_id))];
    expect(cleanIds).toHaveLength(2);
    expect(cleanIds).not.toContain(v1.schemaId);
    expect(cleanIds).not.toContain(v2.schemaId);

    const reveal = await unprotector(pipeline.configFile, pipeline.dataDir);
    for (const { key, value, unknown, bytes } of lines) {
      const id = Number(value.id ?? 0);
      const original = customer(id);
      expect(reveal('Customer.email', value.email)).toBe(original.email);
      expect(reveal('Customer.email', key)).toBe(original.email);
      expect(value.cards).toHaveLength(1);
      expect(value.cards[0]!.number).not.toBe(original.card);
      expect(reveal('Customer.cardNumber', value.cards[0]!.number)).toBe(original.card);
      expect(value.cards[0]!.brand).toBe('visa');
      if (original.profile) {
        expect(reveal('Customer.name', value.profile!.name)).toBe(original.profile.name);
        if (original.profile.tier) expect(value.profile!.tier).toBe(original.profile.tier);
      } else expect(value.profile).toBeUndefined();
      expect(value.phone).toBe(id >= 80 ? original.phone : undefined);
      expect(unknown).toEqual(id % 10 === 0 ? [[99, 42]] : []);

      // byte for byte: the top-level fields veil was not asked to change (id, phone, unknown), and the card's brand
      const rawBody = body((id >= 80 ? v2 : v1).raw.get(id)!);
      const cleanBody = body(bytes);
      expect(without(cleanBody, [2, 3, 4]).equals(without(rawBody, [2, 3, 4]))).toBe(true);
      const card = (b: Buffer) => fieldsOf(fieldsOf(b).find(([n]) => n === 3)![1]).length;
      expect(card(cleanBody)).toBe(card(rawBody));
    }
    // the clean schema Python read: the card number a string under the same number
    const schema = (await (await fetch(`${REGISTRY_URL}/schemas/ids/${cleanIds[0]}`)).json()) as { schema: string; schemaType: string };
    expect(schema.schemaType).toBe('PROTOBUF');
  }, 300_000);

  it('a .proto text schema (as Java and Go clients register) → a clean .proto text schema that protoc compiles and Python reads', async () => {
    const text = readFileSync(join(FIXTURES, 'customer_v1.proto'), 'utf8');
    const registered = await fetch(`${REGISTRY_URL}/subjects/${t.raw}-text-value/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schemaType: 'PROTOBUF', schema: text }),
    });
    const { id } = (await registered.json()) as { id: number };
    const Customer = protobuf.parse(text, { keepCase: true }).root.lookupType('veil.test.Customer');
    const header = Buffer.from([0, 0, 0, 0, 0, 2, 2]);
    header.writeUInt32BE(id, 1);
    const N = 30;
    await produce(
      kafka,
      t.raw,
      Array.from({ length: N }, (_, i) => ({
        key: `text${i}@example.com`,
        value: Buffer.concat([
          header,
          Customer.encode(
            Customer.fromObject({
              id: 1000 + i,
              email: `text${i}@example.com`,
              cards: [{ number: String(5500000000000004n + BigInt(i)), brand: 'mc' }],
              profile: { name: `Text Person ${i}`, tier: 1 },
            }),
          ).finish(),
        ]),
      })),
    );

    const out = await runPython('protobuf_interop.py', ['consume', BROKERS.join(','), REGISTRY_URL, t.clean, 'Customer', String(100 + N), '120'], {
      timeout: 180_000,
    });
    const lines = out
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Clean)
      .filter((l) => Number(l.value.id ?? 0) >= 1000);
    expect(new Set(lines.map((l) => l.value.id)).size).toBe(N);
    const cleanText = ((await (await fetch(`${REGISTRY_URL}/schemas/ids/${lines[0]!.schema_id}`)).json()) as { schema: string }).schema;
    expect(cleanText).toBe(text.replace('uint64 number = 1;', 'string number = 1;'));
    const reveal = await unprotector(pipeline.configFile, pipeline.dataDir);
    for (const { value } of lines) {
      const i = Number(value.id) - 1000;
      expect(reveal('Customer.cardNumber', value.cards[0]!.number)).toBe(String(5500000000000004n + BigInt(i)));
      expect(reveal('Customer.name', value.profile!.name)).toBe(`Text Person ${i}`);
      expect(value.profile!.tier).toBe(1);
    }
  }, 300_000);
});
