import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IHeaders, KafkaMessage } from 'kafkajs';
import { startedPipeline, unprotector } from '../../helpers/stream.ts';
import { javaProduce, kafkaClient, topicsFor } from '../../helpers/kafka.ts';

/** Reads `count` records of a topic (read_committed) as kafkajs hands them over: raw bytes and headers. */
async function rawRecords(topic: string, count: number): Promise<KafkaMessage[]> {
  const consumer = kafkaClient().consumer({ groupId: `raw-${topic}-${Date.now()}`, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got: KafkaMessage[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${got.length} of ${count} records in ${topic}`)), 60_000);
    void consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message);
        if (got.length === count) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await new Promise((r) => setTimeout(r, 500));
  await consumer.disconnect();
  return got;
}

/**
 * What veil is not asked to change passes byte for byte through a real broker: JSON written as
 * raw bytes (never by JSON.stringify) comes out identical outside the mapped values, and headers
 * keep every value of a repeated key, empty, binary and null values.
 */
describe('stream: lossless records against a real broker', () => {
  const t = topicsFor('lossless');
  const kafka = kafkaClient();
  let p: Awaited<ReturnType<typeof startedPipeline>>;

  beforeAll(async () => {
    p = await startedPipeline(kafka, t, 'json', '', 1);
  }, 120_000);
  afterAll(async () => p?.close());

  it('changes only the bytes of the mapped values and keeps every header', async () => {
    // numbers JSON.parse would change, whitespace, escapes, key order and a duplicate key
    const docs = [
      '{"big":9223372036854775807, "email":"ann@example.com","n":9007199254740993,"f":1.0,"z":-0.0,"e":1E+2}',
      '{\n  "nested": {"id": 12345678901234567890123, "s": "caf\\u00e9 \\/ \\"q\\""},\n  "email" : "bob@example.com" ,\n  "profile": {"name": "Bob \\u0042uilder", "tier": 1.50}\n}',
      '{"email":"dup@example.com","x":[1,2.50,-3e-7],"email":"dup2@example.com","cards":[{"number":"4111111111111111","brand":"v"}]}',
    ];
    const headers: IHeaders = { trace: ['a', 'b', 'c'], empty: Buffer.alloc(0), bin: Buffer.from([0, 0xff, 0x80, 0x7f]), spaced: ' x ' };
    const producer = kafka.producer({ idempotent: true });
    await producer.connect();
    await producer.send({ topic: t.raw, acks: -1, messages: docs.map((d, i) => ({ key: `k${i}@example.com`, value: Buffer.from(d, 'utf8'), headers })) });
    await producer.disconnect();
    // null header values and interleaved keys, written by another client: the test below

    const clean = await rawRecords(t.clean, docs.length);
    const unprotect = await unprotector(p.configFile, p.dataDir);
    const fields: Record<string, string> = { email: 'Customer.email', number: 'Customer.cardNumber', name: 'Customer.name' };
    for (const [i, doc] of docs.entries()) {
      const out = clean[i]!.value!.toString('utf8');
      // every mapped string value, replaced by a protected one; everything between them equal
      const pattern = /("(email|number|name)"\s*:\s*)"((?:[^"\\]|\\.)*)"/g;
      let expected = '';
      let last = 0;
      const tokens: string[] = [];
      for (const m of doc.matchAll(pattern)) {
        expected += doc.slice(last, m.index) + m[1];
        expected += '"\u0000"';
        last = m.index! + m[0].length;
        tokens.push(JSON.parse(`"${m[3]}"`));
      }
      expected += doc.slice(last);
      const [before, ...after] = expected.split('"\u0000"');
      expect(out.startsWith(before!)).toBe(true);
      // walk the output: literal pieces must match exactly; each placeholder is one JSON string
      let at = before!.length;
      for (const [j, piece] of after.entries()) {
        const end = out.indexOf('"', at + 1);
        const field = /"(email|number|name)"\s*:\s*$/.exec(out.slice(0, at))![1]!;
        const protectedValue = JSON.parse(out.slice(at, end + 1));
        expect(protectedValue).not.toBe(tokens[j]);
        expect(unprotect(fields[field]!, protectedValue)).toBe(tokens[j]);
        expect(out.slice(end + 1, end + 1 + piece.length)).toBe(piece);
        at = end + 1 + piece.length;
      }
      expect(at).toBe(out.length);
    }
    for (const m of clean) {
      const h = m.headers!;
      expect((h.trace as Buffer[]).map(String)).toEqual(['a', 'b', 'c']);
      expect(Buffer.compare(h.empty as Buffer, Buffer.alloc(0))).toBe(0);
      expect([...(h.bin as Buffer)]).toEqual([0, 0xff, 0x80, 0x7f]);
      expect(String(h.spaced)).toBe(' x ');
      expect(String(h['veil.pipeline'])).toBe('customers');
    }
  }, 120_000);

  it('a null header value written by another client stays null, interleaved repeated keys keep their order; nothing else changes', async () => {
    const before = (await rawRecords(t.clean, 3)).length;
    await javaProduce(t.raw, ['a:1,n:NULL,a:2\tnull@example.com\t{"email":"null@example.com", "n":1.10}']);
    const all = await rawRecords(t.clean, before + 1);
    const m = all.at(-1)!;
    const list = m.headerList!.map((h) => [h.key, h.value === null ? null : h.value.toString()]);
    expect(list.slice(0, 3)).toEqual([
      ['a', '1'],
      ['n', null],
      ['a', '2'],
    ]);
    expect(list.slice(3).map(([k]) => k)).toEqual(['veil.pipeline', 'veil.config.version', 'veil.protected.fields']);
    expect(m.value!.toString()).toMatch(/^\{"email":"[A-Za-z0-9_-]+", "n":1\.10\}$/);
  }, 120_000);
});
