import { describe, expect, it } from 'vitest';
import { PartitionTransactions } from '../../src/stream/partition-transactions.ts';
import type { InRecord } from '../../src/stream/ports.ts';
import { FakeKafka } from './fake-kafka.ts';

const records = (from: number, to: number): InRecord[] => Array.from({ length: to - from + 1 }, (_, i) => ({
  topic: 'raw', partition: 0, offset: String(from + i), key: null, value: Buffer.from(String(from + i)), headers: [], timestamp: '0',
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
});
