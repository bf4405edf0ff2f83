import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startedPipeline, unprotector } from '../../helpers/stream.ts';
import { consume, kafkaClient, produce, topicsFor, type Consumed } from '../../helpers/kafka.ts';

describe('stream: JSON pipeline against a real broker', () => {
  const t = topicsFor('json');
  const kafka = kafkaClient();
  let p: Awaited<ReturnType<typeof startedPipeline>>;

  const customer = (i: number) => ({
    id: `c-${i}`,
    email: `person${i}@example.com`,
    cards: [
      { number: `4111-1111-1111-${String(1000 + i).slice(-4)}`, brand: 'visa' },
      { number: '5500005555555559', brand: 'mc' },
    ],
    profile: { name: `Person Number ${i}`, tier: i % 3 },
    note: 'unmapped stays as is',
  });

  beforeAll(async () => {
    p = await startedPipeline(kafka, t, 'json', '', 2);
  }, 120_000);
  afterAll(async () => p?.close());

  it('protects mapped fields (incl. the key), passes the rest, dead-letters each poison record once', async () => {
    const good = Array.from({ length: 200 }, (_, i) => customer(i));
    const poison = [
      { key: 'k-malformed', value: '{not json', code: 'RECORD_MALFORMED' },
      { key: 'k-short', value: JSON.stringify({ ...customer(900), cards: [{ number: '12' }] }), code: 'VALUE_TOO_SHORT' },
      { key: null, value: JSON.stringify(customer(901)), code: 'KEY_MISSING' },
      { key: 'k-shape', value: JSON.stringify({ ...customer(902), cards: 'not an array' }), code: 'RECORD_MALFORMED' },
      { key: 'k-null', value: null, code: 'RECORD_MALFORMED' },
    ];
    await produce(kafka, t.raw, [
      ...good.slice(0, 100).map((c) => ({ key: c.email, value: JSON.stringify(c), headers: { trace: `t-${c.id}` } })),
      ...poison.map((p) => ({ key: p.key, value: p.value })),
      ...good.slice(100).map((c) => ({ key: c.email, value: JSON.stringify(c), headers: { trace: `t-${c.id}` } })),
    ]);
    const clean = await consume(kafka, t.clean, good.length);
    const dead = await consume(kafka, t.dlq, poison.length);
    expect(clean).toHaveLength(good.length);
    expect(dead).toHaveLength(poison.length);
    expect(dead.map((d) => d.headers['veil.error.code']).sort()).toEqual(poison.map((p) => p.code).sort());
    for (const d of dead) {
      expect(d.headers['veil.pipeline']).toBe('customers');
      expect(d.headers['veil.source.topic']).toBe(t.raw);
      expect(Number(d.headers['veil.source.offset'])).toBeGreaterThanOrEqual(0);
      expect(['0', '1']).toContain(d.headers['veil.source.partition']);
    }

    const reveal = await unprotector(p.configFile, p.dataDir);
    const byId = new Map(good.map((c) => [c.id, c]));
    for (const rec of clean) {
      const out = JSON.parse(rec.value!.toString());
      const original = byId.get(out.id)!;
      expect(out.email).not.toBe(original.email);
      expect(reveal('Customer.email', out.email)).toBe(original.email);
      expect(reveal('Customer.email', rec.key!.toString())).toBe(original.email);
      expect(out.cards.map((c: { number: string }) => reveal('Customer.cardNumber', c.number))).toEqual(original.cards.map((c) => c.number));
      expect(out.cards[0].number.slice(0, 7)).toBe('4111-11');
      expect(reveal('Customer.name', out.profile.name)).toBe(original.profile.name);
      expect(out.profile.tier).toBe(original.profile.tier);
      expect(out.note).toBe(original.note);
      expect(out.cards.map((c: { brand: string }) => c.brand)).toEqual(['visa', 'mc']);
      expect(rec.headers.trace).toBe(`t-${original.id}`);
      expect(rec.headers['veil.pipeline']).toBe('customers');
      expect(rec.headers['veil.protected.fields']).toBe('email,cards[].number,profile.name,(key)');
      expect(rec.headers['veil.config.version']).toMatch(/^[0-9a-f]{12}$/);
      const text = rec.value!.toString() + Object.values(rec.headers).join('');
      expect(text).not.toContain(original.email);
      expect(text).not.toContain(original.profile.name);
    }
  }, 120_000);

  it('keeps the order of each source partition and partitions by the protected key', async () => {
    const clean: Consumed[] = await consume(kafka, t.clean, 200, 30_000, 0);
    const raw: Consumed[] = await consume(kafka, t.raw, 205, 30_000, 0);
    const sourcePartition = new Map<string, number>();
    for (const r of raw) {
      try {
        sourcePartition.set(JSON.parse(r.value!.toString()).id, r.partition);
      } catch {
        /* poison */
      }
    }
    // within one clean partition, the records of one source partition keep their source order
    const sequences = new Map<string, number[]>();
    for (const rec of clean) {
      const id = JSON.parse(rec.value!.toString()).id as string;
      const k = `${rec.partition}/${sourcePartition.get(id)}`;
      sequences.set(k, [...(sequences.get(k) ?? []), Number(id.slice(2))]);
    }
    expect(sequences.size).toBeGreaterThan(1);
    for (const ids of sequences.values()) expect(ids).toEqual([...ids].sort((a, b) => a - b));
    // the same protected key always lands on the same partition
    const keyPartition = new Map<string, number>();
    for (const rec of clean) {
      const k = rec.key!.toString();
      expect(keyPartition.get(k) ?? rec.partition).toBe(rec.partition);
      keyPartition.set(k, rec.partition);
    }
  }, 60_000);

  it('reports records in/out/dead-lettered and lag in Prometheus metrics, without values', async () => {
    const text = await p.stream.metrics.registry.metrics();
    expect(text).toMatch(/veil_stream_records_in_total\{pipeline="customers"\} 205/);
    expect(text).toMatch(/veil_stream_records_out_total\{pipeline="customers"\} 200/);
    expect(text).toMatch(/veil_stream_records_dead_lettered_total\{pipeline="customers",code="RECORD_MALFORMED"\} 3/);
    expect(text).toContain('veil_stream_consumer_lag');
    expect(text).not.toContain('@example.com');
  });
});
