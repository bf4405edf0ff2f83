import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openKafkaPort, plainConnection, streamClient } from '../../../src/kafka/index.ts';
import type { KafkaPort } from '../../../src/kafka/index.ts';
import { streamClients } from '../../helpers/stream-clients.ts';
import type { Batch, ConsumerPort, Header, InRecord } from '../../../src/kafka/index.ts';
import { BROKERS, consume, createTopics, kafkaClient, topicsFor } from '../../helpers/kafka.ts';

/**
 * The KafkaPort contract exactly-once rests on, held by both adapters against the real broker:
 * producer() fences before it returns (kafkajs itself would do so lazily, at the first
 * transaction), transactions commit records and the group's offset together (librdkafka sends
 * them with the group's consumer metadata, KIP-447), committedOffset is stable (require_stable),
 * headers keep order, bytes and null values, and a failed batch is delivered again from its first
 * record.
 */
describe.each(streamClients())('Kafka port on %s (real broker)', (client) => {
  let port: KafkaPort;
  const kafka = kafkaClient();
  const consumers: ConsumerPort[] = [];
  beforeAll(async () => {
    port = await openKafkaPort(streamClient(client), { connection: plainConnection(BROKERS), clientId: `port-test-${client}`, sessionTimeoutMs: 6000 });
  });
  afterAll(async () => {
    for (const c of consumers) await c.disconnect().catch(() => undefined);
    await port?.disconnect();
  }, 60_000);

  /** A consumer of `topic` in `group`, collecting its batches; resolves once it owns partitions. */
  async function groupConsumer(group: string, topic: string, handler: (b: Batch) => Promise<void>): Promise<ConsumerPort> {
    const c = port.consumer({ groupId: group, readCommitted: true });
    consumers.push(c);
    const assigned = new Promise<void>((resolve) => c.on({ assigned: () => resolve() }));
    await c.subscribe([topic]);
    await c.run(async (b) => handler(b));
    await assigned;
    return c;
  }

  it('producer() fences: an older producer of the id can neither commit nor show its records', async () => {
    const t = topicsFor('fence');
    await createTopics(kafka, [t.clean], 1);
    const id = `fence-${t.id}`;
    const old = await port.producer({ transactionalId: id });
    const tx = await old.transaction();
    await tx.send([{ topic: t.clean, key: null, value: Buffer.from('from the zombie'), headers: [] }]);
    const fresh = await port.producer({ transactionalId: id });
    await expect(tx.commit()).rejects.toThrow();
    const ok = await fresh.transaction();
    await ok.send([{ topic: t.clean, key: null, value: Buffer.from('from the new owner'), headers: [] }]);
    await ok.commit();
    const seen = await consume(kafka, t.clean, 2, 5000, 500);
    expect(seen.map((r) => r.value!.toString())).toEqual(['from the new owner']);
    await old.disconnect();
    await fresh.disconnect();
  }, 60_000);

  it('commits records and the group offset in one transaction; committedOffset reads it, null before', async () => {
    const t = topicsFor('offsets');
    await createTopics(kafka, [t.raw, t.clean], 1);
    const group = `group-${t.id}`;
    await groupConsumer(group, t.raw, async () => undefined);
    expect(await port.committedOffset(group, t.raw, 0)).toBeNull();
    const p = await port.producer({ transactionalId: `${group}.${t.raw}.0` });
    const tx = await p.transaction();
    await tx.send([{ topic: t.clean, key: null, value: Buffer.from('x'), headers: [] }]);
    await tx.sendOffsets(group, t.raw, 0, '42');
    await tx.commit();
    expect(await port.committedOffset(group, t.raw, 0)).toBe('42');
    await p.disconnect();
  }, 60_000);

  it('committedOffset waits while a transactional offset of the partition is pending (KIP-447 require_stable)', async () => {
    const t = topicsFor('stable');
    await createTopics(kafka, [t.raw], 2);
    await createTopics(kafka, [t.clean], 1);
    const group = `group-${t.id}`;
    await groupConsumer(group, t.raw, async () => undefined);
    const p = await port.producer({ transactionalId: `${group}.${t.raw}.0` });
    const tx = await p.transaction();
    await tx.send([{ topic: t.clean, key: null, value: Buffer.from('x'), headers: [] }]);
    await tx.sendOffsets(group, t.raw, 0, '7');
    let answer: string | null | undefined;
    const reading = port.committedOffset(group, t.raw, 0).then((o) => (answer = o));
    // reads of the group's other partition, asked after it on the same port, are answered (a pending
    // offset holds up only its own partition): the read of partition 0 had its answers too
    for (let i = 0; i < 2; i++) expect(await port.committedOffset(group, t.raw, 1)).toBeNull();
    // a plain OffsetFetch would answer null here; the pending offset makes the read wait
    expect(answer).toBeUndefined();
    await tx.commit();
    await reading;
    expect(answer).toBe('7');
    await p.disconnect();
  }, 60_000);

  // librdkafka only: kafkajs sends offsets by group id alone (no KIP-447 metadata)
  if (client === 'librdkafka') {
    it('sendOffsets without a consumer of the group in this process is refused (KIP-447 needs its metadata)', async () => {
      const t = topicsFor('nogroup');
      await createTopics(kafka, [t.clean], 1);
      const p = await port.producer({ transactionalId: `nogroup-${t.id}` });
      const tx = await p.transaction();
      await expect(tx.sendOffsets(`nobody-${t.id}`, t.raw, 0, '1')).rejects.toMatchObject({ name: 'KafkaError', code: 'STATE' });
      await tx.abort();
      await p.disconnect();
    }, 60_000);
  }

  it('keeps headers exactly: order across keys, repeated keys, binary and null values', async () => {
    const t = topicsFor('headers');
    await createTopics(kafka, [t.clean], 1);
    const headers: Header[] = [
      { key: 'a', value: Buffer.from('1') },
      { key: 'b', value: null },
      { key: 'a', value: Buffer.from([0, 255, 10, 13]) },
      { key: 'c', value: Buffer.alloc(0) },
      { key: 'b', value: Buffer.from('2') },
    ];
    const p = await port.producer({});
    await p.send([{ topic: t.clean, key: Buffer.from('k'), value: Buffer.from('v'), headers }]);
    await p.disconnect();
    const seen: Batch[] = [];
    await groupConsumer(`hdr-${t.id}`, t.clean, async (b) => void seen.push(b));
    await waitUntil(() => seen.length > 0);
    const got = seen[0]!.records[0]!;
    expect(got.headers.map((h) => [h.key, h.value === null ? null : h.value.toString('hex')])).toEqual(
      headers.map((h) => [h.key, h.value === null ? null : h.value.toString('hex')]),
    );
    expect(got.key!.toString()).toBe('k');
  }, 60_000);

  it('hands over values and keys exactly, each its own bytes: null, empty, binary, long, many in one fetch', async () => {
    // the librdkafka binding (patch 3) puts one fetch's values and keys into one buffer, a view each
    const t = topicsFor('bytes');
    await createTopics(kafka, [t.clean], 1);
    const sent: { key: Buffer | null; value: Buffer | null }[] = [
      { key: null, value: null },
      { key: Buffer.alloc(0), value: Buffer.alloc(0) },
      { key: Buffer.from([0, 255]), value: Buffer.from([0, 1, 2, 255, 0]) },
      { key: null, value: Buffer.alloc(100_000, 0xab) },
      ...Array.from({ length: 300 }, (_, i) => ({ key: Buffer.from(`k${i}`), value: i % 7 === 0 ? null : Buffer.from(`value ${i} `.repeat(i % 13)) })),
    ];
    const p = await port.producer({});
    await p.send(sent.map((r) => ({ topic: t.clean, key: r.key, value: r.value, headers: [] })));
    await p.disconnect();
    const got: InRecord[] = [];
    await groupConsumer(`bytes-${t.id}`, t.clean, async (b) => void got.push(...b.records));
    await waitUntil(() => got.length >= sent.length);
    const hex = (b: Buffer | null) => (b === null ? null : b.toString('hex'));
    expect(got.map((r) => [hex(r.key), hex(r.value)])).toEqual(sent.map((r) => [hex(r.key), hex(r.value)]));
    // writing into one record's bytes changes no other record's
    const before = got.map((r) => [hex(r.key), hex(r.value)]);
    for (const r of got) r.value?.fill(0x11);
    got.forEach((r, i) => expect(hex(r.key)).toBe(before[i]![0]));
  }, 60_000);

  it('a batch whose handler throws is delivered again from its first record, in order', async () => {
    const t = topicsFor('retry');
    await createTopics(kafka, [t.raw], 1);
    const p = await port.producer({});
    await p.send(Array.from({ length: 50 }, (_, i) => ({ topic: t.raw, key: null, value: Buffer.from(String(i)), headers: [] })));
    await p.disconnect();
    const seen: string[] = [];
    let failures = 0;
    await groupConsumer(`retry-${t.id}`, t.raw, async (b) => {
      if (failures < 2 && b.records.some((r) => r.offset === '20')) {
        failures++;
        throw new Error('refused once more');
      }
      seen.push(...b.records.map((r) => r.value!.toString()));
    });
    await waitUntil(() => seen.length >= 50);
    expect(failures).toBe(2);
    expect(seen).toEqual(Array.from({ length: 50 }, (_, i) => String(i)));
  }, 60_000);

  it('a failed batch with records fetched behind it: each record once, in order (none overtakes the retried batch)', async () => {
    const t = topicsFor('behind');
    await createTopics(kafka, [t.raw], 1);
    const total = 20_000;
    const p = await port.producer({});
    await p.send(Array.from({ length: total }, (_, i) => ({ topic: t.raw, key: null, value: Buffer.from(String(i)), headers: [] })));
    await p.disconnect();
    const seen: number[] = [];
    let failures = 0;
    await groupConsumer(`behind-${t.id}`, t.raw, async (b) => {
      // slow batches, so that what follows is fetched and waits while a batch fails
      await new Promise((r) => setTimeout(r, 50));
      if (failures < 3 && b.records.some((r) => r.offset === '3000')) {
        failures++;
        throw new Error('refused');
      }
      seen.push(...b.records.map((r) => Number(r.value!.toString())));
    });
    await waitUntil(() => seen.length >= total);
    await new Promise((r) => setTimeout(r, 500));
    expect(failures).toBe(3);
    expect(seen).toEqual(Array.from({ length: total }, (_, i) => i));
  }, 60_000);

  it("a topic's limit lowered under a transaction: it fails, never commits a part, and the retry on a new producer fits the new limit", async () => {
    const t = topicsFor('lowered');
    await createTopics(kafka, [t.clean], 1);
    const id = `lowered-${t.id}`;
    const record = (i: number) => ({ topic: t.clean, key: null, value: Buffer.from(`${String(i).padStart(4, '0')}${'v'.repeat(996)}`), headers: [] });
    const first = await port.producer({ transactionalId: id });
    const warm = await first.transaction();
    await warm.send([record(0)]);
    await warm.commit(); // the port now knows the topic's default limit (about 1 MB)
    const admin = kafka.admin();
    await admin.connect();
    await admin.alterConfigs({ validateOnly: false, resources: [{ type: 2, name: t.clean, configEntries: [{ name: 'max.message.bytes', value: '20000' }] }] });
    const limitNow = async () =>
      (await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: 2, name: t.clean, configNames: ['max.message.bytes'] }] })).resources[0]!
        .configEntries[0]!.configValue;
    await waitUntilAsync(async () => (await limitNow()) === '20000');
    await new Promise((r) => setTimeout(r, 500)); // the broker's log applies what its metadata says
    await admin.disconnect();
    // 100 KB in one transaction: each batch the client builds under the old limit is over the new one
    const batch = Array.from({ length: 100 }, (_, i) => record(i + 1));
    let failed: unknown;
    let tx = await first.transaction();
    try {
      await tx.send(batch);
      await tx.commit();
    } catch (e) {
      failed = e;
      await tx.abort().catch(() => undefined);
    }
    expect(failed).toBeDefined();
    await first.disconnect();
    // as PartitionTransactions does after a failure: a new producer of the id, the batch again
    const second = await port.producer({ transactionalId: id });
    tx = await second.transaction();
    await tx.send(batch);
    await tx.commit();
    await second.disconnect();
    const seen = await consume(kafka, t.clean, 101, 30_000, 1000);
    expect(seen.map((r) => Number(r.value!.subarray(0, 4).toString()))).toEqual(Array.from({ length: 101 }, (_, i) => i));
  }, 90_000);

  it("a record over a megabyte goes to a topic that takes it (the client's own request limit is not the topic's)", async () => {
    const t = topicsFor('big');
    await createTopics(kafka, [t.clean], 1, { 'max.message.bytes': String(3 * 1024 * 1024) });
    const producer = await port.producer({ transactionalId: `big-${t.id}` });
    const big = Buffer.alloc(1_500_000, 'b');
    const tx = await producer.transaction();
    await tx.send([
      { topic: t.clean, key: null, value: Buffer.from('small'), headers: [] },
      { topic: t.clean, key: null, value: big, headers: [] },
    ]);
    await tx.commit();
    await producer.disconnect();
    const seen = await consume(kafka, t.clean, 2, 30_000, 500);
    expect(seen.map((r) => r.value!.length)).toEqual([5, big.length]);
  }, 60_000);

  it("maxMessageBytes reads a topic's limit", async () => {
    const t = topicsFor('limit');
    await createTopics(kafka, [t.dlq], 1, { 'max.message.bytes': '12345' });
    expect(await port.maxMessageBytes(t.dlq)).toBe(12345);
    // above librdkafka's own cap on a record (64 MiB here) the port reports the cap: a larger record is dead-lettered, not refused by the client for ever
    await createTopics(kafka, [t.clean], 1, { 'max.message.bytes': String(128 * 1024 * 1024) });
    const reported = await port.maxMessageBytes(t.clean);
    if (client === 'librdkafka') expect(reported).toBeLessThan(64 * 1024 * 1024);
    else expect(reported).toBe(128 * 1024 * 1024);
  }, 30_000);
});

async function waitUntilAsync(done: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function waitUntil(done: () => boolean, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}
