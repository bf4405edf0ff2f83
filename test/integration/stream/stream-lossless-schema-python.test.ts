import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLossless, toPlain } from '../../../src/json-bytes/lossless-json.ts';
import { runPython } from '../../helpers/confluent-python.ts';
import { BROKERS, REGISTRY_URL, kafkaClient, topicsFor } from '../../helpers/kafka.ts';
import { startedPipeline, unprotector } from '../../helpers/stream.ts';

const U64_MAX = 2n ** 64n - 1n; // 18446744073709551615
const I64_MAX = 2n ** 63n - 1n; // 9223372036854775807
const I64_MIN = -(2n ** 63n);
const ODD = 2n ** 53n + 1n; // 9007199254740993: JSON.parse reads 9007199254740992

/**
 * The raw JSON Schema the Python side registers, as text (a JS object would round its numbers).
 * `serial`'s bounds, `version`'s const, the enums of `code` and of the card's `limit` (inlined into
 * the clean schema, since cards[].number is protected) accept lossless_schema_interop.py's
 * account(i) only with every digit: rounded to doubles they would refuse each record.
 */
const JSON_SCHEMA = `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"Account","type":"object",
 "properties":{
  "id":{"type":"integer","minimum":0,"maximum":${U64_MAX}},
  "serial":{"type":"integer","minimum":${ODD},"maximum":${ODD}},
  "code":{"enum":[${ODD},${ODD + 2n},${U64_MAX}]},
  "version":{"const":${ODD}},
  "quota":{"type":"integer","default":${U64_MAX},"examples":[${ODD}],"multipleOf":1},
  "ratio":{"type":"number","minimum":-0,"maximum":1.0,"default":1.0},
  "email":{"type":"string","format":"email"},
  "cards":{"type":"array","items":{"$ref":"#/$defs/Card"}},
  "profile":{"type":["object","null"],"properties":{"name":{"type":["string","null"]},"tier":{"type":"integer","maximum":${ODD}}}}},
 "required":["id","serial","code","version","email","cards"],"additionalProperties":false,
 "$defs":{"Card":{"type":"object","properties":{"number":{"type":"string"},"limit":{"enum":[${ODD},${U64_MAX}]}},"required":["number","limit"]}}}`;

/** The raw Avro schema: long defaults up to 2^63 − 1 in fields, a nested record, an array, a map and a union; cards[].number (protected) is a long. */
const AVRO_SCHEMA = `{"type":"record","name":"Account","namespace":"test.veil","fields":[
 {"name":"id","type":"long","default":${I64_MAX}},
 {"name":"email","type":"string"},
 {"name":"cards","type":{"type":"array","items":{"type":"record","name":"Card","fields":[{"name":"number","type":"long","default":${I64_MAX}},{"name":"limit","type":"long","default":${I64_MIN}}]}},
  "default":[{"number":${I64_MAX},"limit":${I64_MIN}}]},
 {"name":"profile","type":["null",{"type":"record","name":"Profile","fields":[{"name":"name","type":["null","string"],"default":null},{"name":"tier","type":"long","default":${ODD}}]}],"default":null},
 {"name":"serial","type":["long","null"],"default":${ODD}},
 {"name":"ratio","type":"double","default":1.0},
 {"name":"counters","type":{"type":"map","values":"long"},"default":{"max":${I64_MAX},"odd":${ODD}}}]}`;

interface Line {
  key: string;
  schema_id: number;
  value: Record<string, unknown>;
}

/** the Python script's lines, read losslessly (integers beyond 2^53 as bigints) */
const lines = (out: string) =>
  out
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => toPlain(parseLossless(l), true) as unknown as Line);
const schemaText = async (id: number) => ((await (await fetch(`${REGISTRY_URL}/schemas/ids/${id}`)).json()) as { schema: string }).schema;

/**
 * Derived clean schemas keep every number as written, end to end with confluent-kafka's (Python)
 * serializers: the raw schemas hold integers beyond 2^53 (up to 2^64 − 1 in JSON Schema, 2^63 − 1
 * as Avro long defaults); veil's clean schemas must hold the same digits, or Python's exact
 * integers fail validation against them.
 */
describe('stream: numbers in derived clean schemas, read by confluent-kafka (Python) deserializers', () => {
  const kafka = kafkaClient();

  describe('JSON Schema: JSONSerializer → veil (validate: true) → JSONDeserializer validating against the clean schema', () => {
    const t = topicsFor('lossless-json-py');
    let pipeline: Awaited<ReturnType<typeof startedPipeline>>;
    beforeAll(async () => {
      pipeline = await startedPipeline(kafka, t, 'json-schema', '    validate: true');
    }, 120_000);
    afterAll(async () => pipeline?.close());

    it('every record once, valid against the clean schema, its numbers exact; the clean schema holds the raw digits', async () => {
      const N = 30;
      const produced = JSON.parse(
        await runPython('lossless_schema_interop.py', ['produce', 'json', BROKERS.join(','), REGISTRY_URL, t.raw, String(N), JSON_SCHEMA]),
      ) as { schema_id: number };
      const got = lines(
        await runPython('lossless_schema_interop.py', ['consume', 'json', BROKERS.join(','), REGISTRY_URL, t.clean, String(N), '90'], { timeout: 150_000 }),
      );
      const emails = got.map((l) => l.key);
      expect({ records: got.length, unique: new Set(emails).size }).toEqual({ records: N, unique: N });
      const cleanIds = new Set(got.map((l) => l.schema_id));
      expect(cleanIds.size).toBe(1);
      const cleanId = got[0]!.schema_id;
      expect(cleanId).not.toBe(produced.schema_id);

      const reveal = await unprotector(pipeline.configFile, pipeline.dataDir);
      for (const { key, value } of got) {
        const email = reveal('Customer.email', value.email as string);
        expect(reveal('Customer.email', key)).toBe(email);
        const i = Number(/^big(\d+)@example\.com$/.exec(email)![1]);
        expect(value.id).toBe(U64_MAX - BigInt(i));
        expect({ serial: value.serial, version: value.version, code: value.code, quota: value.quota, ratio: value.ratio }).toEqual({
          serial: ODD,
          version: ODD,
          code: [ODD, ODD + 2n, U64_MAX][i % 3],
          quota: ODD + BigInt(i),
          ratio: 1,
        });
        const card = (value.cards as { number: string; limit: bigint }[])[0]!;
        expect(reveal('Customer.cardNumber', card.number)).toBe(`4111 1111 1111 ${String(1000 + i).padStart(4, '0')}`);
        expect(card.limit).toBe([ODD, U64_MAX][i % 2]);
      }

      const raw = await schemaText(produced.schema_id);
      const clean = await schemaText(cleanId);
      for (const digits of [
        `"maximum":${U64_MAX}`,
        `"minimum":${ODD},"maximum":${ODD}`,
        `"enum":[${ODD},${ODD + 2n},${U64_MAX}]`,
        `"const":${ODD}`,
        `"default":${U64_MAX},"examples":[${ODD}]`,
        '"minimum":-0,"maximum":1.0,"default":1.0',
        `"limit":{"enum":[${ODD},${U64_MAX}]}`,
      ]) {
        expect(raw.replace(/\s+/g, '')).toContain(digits);
        expect(clean).toContain(digits);
      }
      const parsed = JSON.parse(clean) as { properties: Record<string, { properties?: Record<string, unknown> }> };
      expect(parsed.properties.email).toEqual({ type: 'string' });
      expect(parsed.properties.cards!.properties).toBeUndefined();
      expect(clean).toContain('"items":{"type":"object","properties":{"number":{"type":"string"}');
    }, 300_000);
  });

  describe('Avro: AvroSerializer → veil → AvroDeserializer with the clean schema', () => {
    const t = topicsFor('lossless-avro-py');
    let pipeline: Awaited<ReturnType<typeof startedPipeline>>;
    beforeAll(async () => {
      pipeline = await startedPipeline(kafka, t, 'avro');
    }, 120_000);
    afterAll(async () => pipeline?.close());

    it('every record once with its longs exact; the clean schema keeps each long default as written (a protected one as its text)', async () => {
      const N = 30;
      const produced = JSON.parse(
        await runPython('lossless_schema_interop.py', ['produce', 'avro', BROKERS.join(','), REGISTRY_URL, t.raw, String(N), AVRO_SCHEMA]),
      ) as { schema_id: number };
      const got = lines(
        await runPython('lossless_schema_interop.py', ['consume', 'avro', BROKERS.join(','), REGISTRY_URL, t.clean, String(N), '90'], { timeout: 150_000 }),
      );
      expect({ records: got.length, unique: new Set(got.map((l) => l.key)).size }).toEqual({ records: N, unique: N });
      expect(new Set(got.map((l) => l.schema_id)).size).toBe(1);
      const cleanId = got[0]!.schema_id;
      expect(cleanId).not.toBe(produced.schema_id);

      const reveal = await unprotector(pipeline.configFile, pipeline.dataDir);
      for (const { value } of got) {
        const i = Number(/^big(\d+)@example\.com$/.exec(reveal('Customer.email', value.email as string))![1]);
        expect(value.id).toBe(I64_MAX - BigInt(i));
        const card = (value.cards as { number: string; limit: bigint | number }[])[0]!;
        expect(reveal('Customer.cardNumber', card.number)).toBe(String(4111111111111111 + i));
        expect(BigInt(card.limit)).toBe(I64_MIN + BigInt(i));
        expect(value.serial).toBe(i % 2 ? null : ODD + BigInt(i));
        expect(value.counters).toEqual({ b: I64_MAX, 1: I64_MIN });
        if (i % 5 === 0) expect(value.profile).toBeNull();
        else {
          expect((value.profile as { tier: bigint }).tier).toBe(ODD + BigInt(i));
          expect(reveal('Customer.name', (value.profile as { name: string }).name)).toBe(`Big Person ${i}`);
        }
      }

      const clean = await schemaText(cleanId);
      expect(clean).toContain(`{"name":"id","type":"long","default":${I64_MAX}}`);
      expect(clean).toContain(`"fields":[{"name":"number","type":"string","default":"${I64_MAX}"},{"name":"limit","type":"long","default":${I64_MIN}}]`);
      expect(clean).toContain(`"default":[{"number":"${I64_MAX}","limit":${I64_MIN}}]`);
      expect(clean).toContain(`{"name":"tier","type":"long","default":${ODD}}`);
      expect(clean).toContain(`{"name":"serial","type":["long","null"],"default":${ODD}}`);
      expect(clean).toContain('{"name":"ratio","type":"double","default":1.0}');
      expect(clean).toContain(`"default":{"max":${I64_MAX},"odd":${ODD}}`);
    }, 300_000);
  });
});
