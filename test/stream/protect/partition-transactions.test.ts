import { describe, expect, it } from 'vitest';
import { PartitionTransactions } from '../../../src/stream/protect/partition-transactions.ts';
import type { InRecord } from '../../../src/kafka/index.ts';
import { FakeKafka } from '../fake-kafka.ts';

const records = (from: number, to: number): InRecord[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({
    topic: 'raw',
    partition: 0,
    offset: String(from + i),
    key: null,
    value: Buffer.from(String(from + i)),
    headers: [],
    timestamp: '0',
  }));

const copy = (rs: InRecord[], tx: { send(r: { topic: string; key: Buffer | null; value: Buffer | null; headers: [] }[]): Promise<void> }) =>
  tx.send(rs.map((r) => ({ topic: 'clean', key: r.key, value: r.value, headers: [] as [] })));

describe('PartitionTransactions', () => {
  it('skips records below the offset it committed itself: a batch delivered again never moves the group offset back', async () => {
    const kafka = new FakeKafka();
    const tx = new PartitionTransactions(kafka, 'g');
    expect((await tx.run('raw', 0, records(0, 9), '10', copy)).length).toBe(10);
    expect((await tx.run('raw', 0, records(10, 19), '20', copy)).length).toBe(10);
    // the consumer delivers an older batch again (e.g. a seek that landed late): nothing is produced
    expect(await tx.run('raw', 0, records(10, 19), '20', copy)).toEqual([]);
    expect(kafka.offsets.get('raw/0')).toBe('20');
    expect(kafka.committed.map((r) => Number(r.value!.toString()))).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('after a failed commit whose outcome is unknown, re-fences and reads the offset: the retry is exact either way', async () => {
    for (const landed of [true, false]) {
      const kafka = new FakeKafka();
      const tx = new PartitionTransactions(kafka, 'g');
      await tx.run('raw', 0, records(0, 9), '10', copy);
      kafka.failNextCommit = { landed };
      await expect(tx.run('raw', 0, records(10, 19), '20', copy)).rejects.toMatchObject({ code: 'TRANSACTION_ABORTED', retriable: true });
      await tx.run('raw', 0, records(10, 19), '20', copy);
      expect(kafka.committed.map((r) => Number(r.value!.toString()))).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(kafka.offsets.get('raw/0')).toBe('20');
    }
  });
  it('abandon: a batch stuck in its commit no longer holds the partition; the next batch fences anew and commits, and the stuck one, if it ever ends, disposes nothing of it', async () => {
    const kafka = new FakeKafka();
    const tx = new PartitionTransactions(kafka, 'g');
    expect((await tx.run('raw', 0, records(0, 9), '10', copy)).length).toBe(10);
    kafka.hangNextCommit = true;
    const stuck = tx.run('raw', 0, records(10, 19), '20', copy);
    stuck.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 20));
    // closeAll would wait for the stuck batch; abandon does not
    const closing = Promise.race([tx.closeAll().then(() => 'closed'), new Promise((r) => setTimeout(() => r('waiting'), 50))]);
    expect(await closing).toBe('waiting');
    const before = kafka.producersDisconnected;
    tx.abandon();
    expect(kafka.producersDisconnected).toBe(before + 1);
    const producers = kafka.producersCreated;
    expect((await tx.run('raw', 0, records(10, 19), '20', copy)).length).toBe(10);
    expect(kafka.producersCreated).toBe(producers + 1);
    expect(kafka.offsets.get('raw/0')).toBe('20');
    expect(kafka.committed.map((r) => Number(r.value!.toString()))).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  describe('caught up past transaction markers (offsets-only transactions)', () => {
    it("commits a batch's end beyond its last record with the batch, and a caught-up position in a transaction of offsets only", async () => {
      const kafka = new FakeKafka();
      const tx = new PartitionTransactions(kafka, 'g');
      // records 0-9 and the transaction marker at 10: the batch commits 11
      await tx.run('raw', 0, records(0, 9), '11', copy);
      expect(kafka.offsets.get('raw/0')).toBe('11');
      // records 11-14, the marker at 15 fetched later: the position 16 committed alone
      await tx.run('raw', 0, records(11, 14), '15', copy);
      const before = kafka.committed.length;
      expect(await tx.commitEnd('raw', 0, '16')).toBe('16');
      expect(kafka.offsets.get('raw/0')).toBe('16');
      expect(kafka.committed.length).toBe(before);
    });

    it('never moves the offset back and opens no transaction when the position is not beyond it', async () => {
      const kafka = new FakeKafka();
      const tx = new PartitionTransactions(kafka, 'g');
      await tx.run('raw', 0, records(0, 9), '10', copy);
      const transactions = kafka.transactionsCommitted;
      expect(await tx.commitEnd('raw', 0, '10')).toBe('10');
      expect(await tx.commitEnd('raw', 0, '4')).toBe('10');
      expect(kafka.transactionsCommitted).toBe(transactions);
      expect(kafka.offsets.get('raw/0')).toBe('10');
    });

    it("waits for the partition's batch in flight: the offset it commits is never overtaken", async () => {
      const kafka = new FakeKafka();
      const tx = new PartitionTransactions(kafka, 'g');
      let release!: () => void;
      const slow = tx.run('raw', 0, records(0, 9), '10', async (rs, t) => {
        await new Promise<void>((r) => (release = r));
        await copy(rs, t);
      });
      const end = tx.commitEnd('raw', 0, '11');
      await new Promise((r) => setTimeout(r, 10));
      expect(kafka.offsets.get('raw/0')).toBeUndefined();
      release();
      await slow;
      expect(await end).toBe('11');
      expect(kafka.offsets.get('raw/0')).toBe('11');
    });

    it('a failed offsets-only commit aborts, discards the producer and is retriable; tried again it commits once', async () => {
      const kafka = new FakeKafka();
      const tx = new PartitionTransactions(kafka, 'g');
      await tx.run('raw', 0, records(0, 9), '10', copy);
      kafka.failNextCommit = { landed: false };
      const disconnected = kafka.producersDisconnected;
      await expect(tx.commitEnd('raw', 0, '11')).rejects.toMatchObject({ code: 'TRANSACTION_ABORTED', retriable: true });
      expect(kafka.producersDisconnected).toBe(disconnected + 1);
      expect(kafka.offsets.get('raw/0')).toBe('10');
      expect(await tx.commitEnd('raw', 0, '11')).toBe('11');
    });

    it('a position reported before a rebalance commits nothing and fences nobody: the partition may have a new owner', async () => {
      const kafka = new FakeKafka();
      const tx = new PartitionTransactions(kafka, 'g');
      await tx.run('raw', 0, records(0, 9), '10', copy);
      let release!: () => void;
      const slow = tx.run('raw', 0, records(10, 14), '15', async (rs, t) => {
        await new Promise<void>((r) => (release = r));
        await copy(rs, t);
      });
      await new Promise((r) => setTimeout(r, 10));
      // reported while the batch runs, then the group rebalances and the partition goes elsewhere
      const stale = tx.commitEnd('raw', 0, '16');
      tx.reassigned({ raw: [1] });
      const producers = kafka.producersCreated;
      release();
      await slow;
      expect(await stale).toBeUndefined();
      expect(kafka.producersCreated).toBe(producers + 1); // the eager fence of partition 1 only
      expect(kafka.offsets.get('raw/0')).toBe('15');
    });

    it('a batch wholly committed before, with markers behind it that were not: only the offset moves', async () => {
      const kafka = new FakeKafka();
      kafka.offsets.set('raw/0', '10');
      const tx = new PartitionTransactions(kafka, 'g');
      expect(await tx.run('raw', 0, records(5, 9), '11', copy)).toEqual([]);
      expect(kafka.committed).toEqual([]);
      expect(kafka.offsets.get('raw/0')).toBe('11');
    });
  });
});
