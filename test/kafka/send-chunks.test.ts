import { describe, expect, it } from 'vitest';
import { inChunks, MAX_SEND_BYTES } from '../../src/kafka/send-chunks.ts';
import { BATCH_OVERHEAD } from '../../src/kafka/record-size.ts';
import type { OutRecord } from '../../src/kafka/index.ts';

const record = (topic: string, i: number): OutRecord => ({ topic, key: null, value: Buffer.alloc(1000, i % 256), headers: [] });
const records = [...Array.from({ length: 30 }, (_, i) => record('clean', i)), record('dlq', 99)];

async function sent(limits: Record<string, number>, clientBatchBytes?: number) {
  const calls: { count: number; settle: boolean }[] = [];
  const order: OutRecord[] = [];
  await inChunks(
    records,
    async (t) => limits[t]!,
    async (chunk, settle) => {
      calls.push({ count: chunk.length, settle });
      order.push(...chunk);
    },
    () => false,
    () => undefined,
    clientBatchBytes,
  );
  return { calls, order };
}

describe('inChunks', () => {
  it('sends every record once, in order, as one unsettled chunk when each topic takes a whole client batch', async () => {
    const cap = 50_000;
    const { calls, order } = await sent({ clean: cap + BATCH_OVERHEAD, dlq: 1_048_588 }, cap);
    expect(calls).toEqual([{ count: 31, settle: false }]);
    expect(order).toEqual(records);
  });

  it("settles chunk after chunk, each under its topic's limit, when one topic takes less than a client batch", async () => {
    const cap = 50_000;
    const { calls, order } = await sent({ clean: 10_000, dlq: cap + BATCH_OVERHEAD }, cap);
    expect(calls.length).toBeGreaterThan(3);
    expect(calls.every((c) => c.settle && c.count <= 9)).toBe(true);
    expect(order).toEqual(records);
  });

  it('settles every chunk when the client caps no batch (the kafkajs adapter)', async () => {
    const { calls } = await sent({ clean: 1_048_588, dlq: 1_048_588 });
    expect(calls).toEqual([{ count: 31, settle: true }]);
  });

  it("a refusal as too large forgets the limits of the send's topics, then rethrows", async () => {
    const forgotten: string[] = [];
    const tooLarge = new Error('too large');
    await expect(
      inChunks(
        records,
        async () => MAX_SEND_BYTES * 2,
        async () => {
          throw tooLarge;
        },
        (e) => e === tooLarge,
        (t) => forgotten.push(t),
        MAX_SEND_BYTES,
      ),
    ).rejects.toBe(tooLarge);
    expect(forgotten.sort()).toEqual(['clean', 'dlq']);
  });

  it('refuses, before queuing any record, a send holding a key or value whose buffer was given away (transferred): it would go out empty', async () => {
    for (const part of ['key', 'value'] as const) {
      const given = new ArrayBuffer(8);
      const view = Buffer.from(given, 0, 8);
      structuredClone(given, { transfer: [given] });
      expect(view.length).toBe(0);
      const bad = { ...record('clean', 1), [part]: view };
      const queued: OutRecord[] = [];
      const refusal = inChunks(
        [record('clean', 0), bad],
        async () => MAX_SEND_BYTES * 2,
        async (chunk) => void queued.push(...chunk),
        () => false,
        () => undefined,
        MAX_SEND_BYTES,
      );
      await expect(refusal).rejects.toMatchObject({ name: 'KafkaError', code: 'RECORD_DETACHED', retriable: true });
      expect(queued).toEqual([]);
    }
  });

  it('sends a record of a SharedArrayBuffer and an empty one as they are (neither was given away)', async () => {
    const shared = Buffer.from(new SharedArrayBuffer(4));
    const queued: OutRecord[] = [];
    const ok = [
      { ...record('clean', 0), value: shared },
      { ...record('clean', 1), value: Buffer.alloc(0), key: Buffer.alloc(0) },
    ];
    await inChunks(
      ok,
      async () => MAX_SEND_BYTES * 2,
      async (chunk) => void queued.push(...chunk),
      () => false,
      () => undefined,
      MAX_SEND_BYTES,
    );
    expect(queued).toEqual(ok);
  });
});
