import { describe, expect, it } from 'vitest';
import type { InRecord } from '../../../src/kafka/index.ts';
import { ProtectAhead } from '../../../src/stream/protect/protect-ahead.ts';
import type { ChunkOutcome } from '../../../src/stream/protect/record-protector.ts';

const rec = (offset: number): InRecord => ({
  topic: 'raw',
  partition: 0,
  offset: String(offset),
  key: null,
  value: Buffer.from(`{"id":${offset}}`),
  headers: [],
  timestamp: '0',
});
const run = (from: number, n: number) => Array.from({ length: n }, (_, i) => rec(from + i));

/** a protector whose calls wait until released, in order */
function manual() {
  const calls: { records: readonly InRecord[]; release: () => void; fail: () => void }[] = [];
  const protect = (records: readonly InRecord[]) =>
    new Promise<ChunkOutcome[]>((resolve, reject) => {
      calls.push({ records, release: () => resolve(records.map((r) => ({ key: null, value: r.value! }))), fail: () => reject(new Error('worker exited')) });
    });
  return { calls, protect };
}
const settle = () => new Promise((r) => setImmediate(r));

describe('ProtectAhead', () => {
  it('protects an offer at once when nothing else is protected, in chunks, and hands it to exactly that batch', async () => {
    const m = manual();
    const ahead = new ProtectAhead(3, m.protect);
    const next = run(10, 7);
    ahead.offer('raw/0', next);
    expect(m.calls.map((c) => c.records.length)).toEqual([3, 3, 1]);
    ahead.begin('raw/0');
    const chunks = ahead.take('raw/0', next)!;
    expect(chunks).toHaveLength(3);
    m.calls.forEach((c) => c.release());
    expect((await chunks[2]!).length).toBe(1);
    expect(ahead.take('raw/0', next)).toBeUndefined();
  });

  it('waits while its partition protects a batch or any protection is under way, then fills the idle time', async () => {
    const m = manual();
    const ahead = new ProtectAhead(10, m.protect);
    ahead.begin('raw/0');
    const current = ahead.protectNow(run(0, 5));
    ahead.offer('raw/0', run(5, 5));
    ahead.offer('raw/1', run(0, 5));
    expect(m.calls).toHaveLength(1); // only the current batch
    m.calls[0]!.release();
    await current;
    await settle();
    // raw/0 still protecting its batch; raw/1's offer starts on the idle protector
    expect(m.calls.map((c) => c.records[0]!.offset)).toEqual(['0', '0']);
    m.calls[1]!.release();
    await settle();
    expect(m.calls).toHaveLength(2);
    ahead.protected('raw/0');
    expect(m.calls.map((c) => c.records[0]!.offset)).toEqual(['0', '0', '5']);
  });

  it('a batch that failed does not start look-aheads; one that starts at or before an offer drops it', () => {
    const m = manual();
    const ahead = new ProtectAhead(10, m.protect);
    ahead.begin('raw/0');
    ahead.offer('raw/0', run(10, 5));
    ahead.protected('raw/0', false);
    expect(m.calls).toHaveLength(0);
    expect(ahead.take('raw/0', run(10, 3))).toBeUndefined(); // same start, other length: dropped
    ahead.protected('raw/0');
    expect(m.calls).toHaveLength(0);
  });

  it('keeps at most the two next batches of a partition, and a failed look-ahead leaves no unhandled rejection', async () => {
    const m = manual();
    const ahead = new ProtectAhead(10, m.protect);
    const [a, b, c] = [run(0, 2), run(2, 2), run(4, 2)];
    ahead.offer('raw/0', a);
    ahead.offer('raw/0', b);
    ahead.offer('raw/0', c);
    // a started at once; b and c wait, and start one after the other as protection goes idle
    for (let i = 0; i < 3; i++) {
      expect(m.calls).toHaveLength(i + 1);
      m.calls[i]!.fail();
      await settle();
    }
    expect(m.calls.map((call) => call.records[0]!.offset)).toEqual(['0', '2', '4']);
    expect(ahead.take('raw/0', a)).toBeUndefined(); // pushed out by c
    const chunks = ahead.take('raw/0', c)!;
    await expect(chunks[0]).rejects.toThrow('worker exited');
    ahead.clear();
    expect(ahead.take('raw/0', b)).toBeUndefined();
  });
});
