import { afterAll, describe, expect, it } from 'vitest';
import { kafkajsPort } from '../../src/stream/kafkajs-adapter.ts';
import { BROKERS, consume, createTopics, kafkaClient, topicsFor } from '../helpers/kafka.ts';

/**
 * The port's promises that exactly-once rests on, against the real broker: producer() for a
 * transactional id returns only after it fenced the id's earlier producers (kafkajs itself would
 * do so lazily, at the first transaction), and committedOffset reads what a transaction committed.
 */
describe('kafkajs port (real broker)', () => {
  const port = kafkajsPort({ brokers: BROKERS, clientId: 'port-test' });
  const kafka = kafkaClient();
  afterAll(() => port.disconnect());

  it('producer() fences: an older producer of the id can neither commit nor show its records', async () => {
    const t = topicsFor('fence');
    await createTopics(kafka, [t.clean], 1);
    const id = `fence-${t.id}`;
    const old = await port.producer({ transactionalId: id });
    const tx = await old.transaction();
    await tx.send([{ topic: t.clean, key: null, value: Buffer.from('from the zombie'), headers: [] }]);
    const fresh = await port.producer({ transactionalId: id });
    // the zombie's open transaction was aborted by the fence; its commit is refused
    await expect(tx.commit()).rejects.toThrow();
    const ok = await fresh.transaction();
    await ok.send([{ topic: t.clean, key: null, value: Buffer.from('from the new owner'), headers: [] }]);
    await ok.commit();
    const seen = await consume(kafka, t.clean, 2, 5000, 500);
    expect(seen.map((r) => r.value!.toString())).toEqual(['from the new owner']);
    await old.disconnect();
    await fresh.disconnect();
  }, 60_000);

  it('committedOffset reads the offset a transaction committed, null before any', async () => {
    const t = topicsFor('offsets');
    await createTopics(kafka, [t.raw, t.clean], 1);
    const group = `group-${t.id}`;
    expect(await port.committedOffset(group, t.raw, 0)).toBeNull();
    const p = await port.producer({ transactionalId: `${group}.${t.raw}.0` });
    const tx = await p.transaction();
    await tx.send([{ topic: t.clean, key: null, value: Buffer.from('x'), headers: [] }]);
    await tx.sendOffsets(group, t.raw, 0, '42');
    await tx.commit();
    // a new producer of the id completes the transaction before it returns; then the offset is there
    const next = await port.producer({ transactionalId: `${group}.${t.raw}.0` });
    expect(await port.committedOffset(group, t.raw, 0)).toBe('42');
    await p.disconnect();
    await next.disconnect();
  }, 60_000);

  it('committedOffset waits while a transactional offset of the partition is pending (KIP-447 require_stable)', async () => {
    const t = topicsFor('stable');
    await createTopics(kafka, [t.raw, t.clean], 1);
    const group = `group-${t.id}`;
    const p = await port.producer({ transactionalId: `${group}.${t.raw}.0` });
    const tx = await p.transaction();
    await tx.send([{ topic: t.clean, key: null, value: Buffer.from('x'), headers: [] }]);
    await tx.sendOffsets(group, t.raw, 0, '7');
    let answer: string | null | undefined;
    const reading = port.committedOffset(group, t.raw, 0).then((o) => (answer = o));
    await new Promise((r) => setTimeout(r, 1500));
    // a plain OffsetFetch would answer null here; the pending offset makes the read wait
    expect(answer).toBeUndefined();
    await tx.commit();
    await reading;
    expect(answer).toBe('7');
    await p.disconnect();
  }, 60_000);

  it('maxMessageBytes reads a topic\'s limit', async () => {
    const t = topicsFor('limit');
    await createTopics(kafka, [t.dlq], 1, { 'max.message.bytes': '12345' });
    expect(await port.maxMessageBytes(t.dlq)).toBe(12345);
  }, 30_000);
});
