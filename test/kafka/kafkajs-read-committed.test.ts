import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { kafkajsCopies } from '../helpers/patched-kafkajs.ts';

/**
 * veil's kafkajs patch (patches/kafkajs/01-read-committed.patch) filters aborted transactions the
 * way Kafka's Java consumer does. Tested on real record-batch bytes, encoded and decoded by the
 * patched kafkajs itself, against a model of the log: a fetch returns exactly the records of
 * committed transactions and of non-transactional producers, whatever the interleaving of the
 * producers' transactions and wherever the fetch starts.
 */

const copies = kafkajsCopies();
afterAll(() => copies.remove());

type Load = (path: string) => unknown;
const from =
  (dir: string): Load =>
  (path) =>
    copies.load(dir, path);

interface LogBatch {
  first: number;
  count: number;
  producerId: number;
  transactional: boolean;
  control?: 'abort' | 'commit';
}
interface AbortedTxn {
  producerId: number;
  first: number;
  marker: number;
}
interface Log {
  batches: LogBatch[];
  aborted: AbortedTxn[];
  committed: Set<number>;
  end: number;
}

/** One record batch as a broker stores and serves it (a control batch: one ABORT or COMMIT record). */
async function encodeBatch(load: Load, b: LogBatch): Promise<Buffer> {
  const Record = load('src/protocol/recordBatch/record/v0/index.js') as (r: object) => object;
  const { RecordBatch } = load('src/protocol/recordBatch/v0/index.js') as { RecordBatch: (b: object) => Promise<{ buffer: Buffer }> };
  const crc32C = load('src/protocol/recordBatch/crc32C/index.js') as (b: Buffer) => number;
  const records = Array.from({ length: b.count }, (_, i) =>
    Record({
      offsetDelta: i,
      key: b.control ? Buffer.from([0, 0, 0, b.control === 'abort' ? 0 : 1]) : Buffer.from(`k${b.first + i}`),
      value: b.control ? Buffer.from([0, 0, 0, 0, 0, 0]) : Buffer.from(String(b.first + i)),
    }),
  );
  const out = Buffer.from(
    (
      await RecordBatch({
        records,
        firstOffset: b.first,
        lastOffsetDelta: b.count - 1,
        transactional: b.transactional,
        producerId: b.producerId,
        producerEpoch: 0,
      })
    ).buffer,
  );
  if (b.control) {
    // attributes (after base offset 8, length 4, leader epoch 4, magic 1, crc 4): the control flag, and the crc again
    out.writeInt16BE(out.readInt16BE(21) | 0x20, 21);
    out.writeUInt32BE(crc32C(out.subarray(21)), 17);
  }
  return out;
}

interface Message {
  offset: string;
  value: Buffer | null;
}

/** What a read_committed fetch from `start` returns: the batches from the one holding `start`, `take` of them. */
async function fetchOf(load: Load, log: Log, start: number, take: number): Promise<{ offsets: number[]; expected: number[] }> {
  const from = log.batches.findIndex((b) => b.first + b.count > start);
  const served = log.batches.slice(from, from + take);
  const last = served.at(-1)!.first + served.at(-1)!.count - 1;
  // the broker's aborted transactions for [start, last]: those not over before it and begun within it
  const aborted = log.aborted
    .filter((t) => t.marker >= start && t.first <= last)
    .map((t) => ({ producerId: String(t.producerId), firstOffset: String(t.first) }))
    .reverse();
  const bytes = Buffer.concat(await Promise.all(served.map((b) => encodeBatch(load, b))));
  const Decoder = load('src/protocol/decoder.js') as new (b: Buffer) => unknown;
  const decodeMessages = load('src/protocol/requests/fetch/v4/decodeMessages.js') as (d: unknown) => Promise<Message[]>;
  const size = Buffer.alloc(4);
  size.writeInt32BE(bytes.length);
  const messages = await decodeMessages(new Decoder(Buffer.concat([size, bytes])));
  const Batch = load('src/consumer/batch.js') as new (topic: string, fetched: string, data: object) => { messages: Message[] };
  const batch = new Batch('raw', String(start), { partition: 0, highWatermark: String(log.end), abortedTransactions: aborted, messages });
  const expected = [...log.committed].filter((o) => o >= start && o <= last).sort((a, b) => a - b);
  return { offsets: batch.messages.map((m) => Number(m.offset)), expected };
}

const TXN_PRODUCERS = [1001, 1002, 1003];
const IDEMPOTENT = 2001;
type Step = { p: number; action: 'write' | 'commit' | 'abort'; n: number };

/** A partition's log from the producers' steps: transactions interleave; the open ones end last. */
function logOf(steps: Step[], endings: boolean[]): Log {
  const log: Log = { batches: [], aborted: [], committed: new Set(), end: 0 };
  const open = new Map<number, { first: number; offsets: number[] }>();
  const write = (b: LogBatch) => {
    log.batches.push(b);
    log.end += b.count;
  };
  const end = (producerId: number, abort: boolean) => {
    const txn = open.get(producerId)!;
    open.delete(producerId);
    if (abort) log.aborted.push({ producerId, first: txn.first, marker: log.end });
    else for (const o of txn.offsets) log.committed.add(o);
    write({ first: log.end, count: 1, producerId, transactional: true, control: abort ? 'abort' : 'commit' });
  };
  for (const { p, action, n } of steps) {
    if (p >= TXN_PRODUCERS.length) {
      // a non-transactional record batch, idempotent (it has a producer id) or not
      for (let i = 0; i < n; i++) log.committed.add(log.end + i);
      write({ first: log.end, count: n, producerId: p === 3 ? IDEMPOTENT : -1, transactional: false });
      continue;
    }
    const producerId = TXN_PRODUCERS[p]!;
    if (action !== 'write') {
      if (open.has(producerId)) end(producerId, action === 'abort');
      continue;
    }
    if (!open.has(producerId)) open.set(producerId, { first: log.end, offsets: [] });
    for (let i = 0; i < n; i++) open.get(producerId)!.offsets.push(log.end + i);
    write({ first: log.end, count: n, producerId, transactional: true });
  }
  for (const [i, producerId] of [...open.keys()].entries()) end(producerId, endings[i] ?? true);
  return log;
}

/** Steps written short, space-separated: `1w2` producer 1 writes 2 records, `1a` producer 1 aborts, `1c` commits. */
function stepsOf(text: string): Step[] {
  const actions = { w: 'write', a: 'abort', c: 'commit' } as const;
  return text.split(' ').map((step) => {
    const [, p, action, n] = /^(\d)([wac])(\d?)$/.exec(step)!;
    return { p: Number(p), action: actions[action as keyof typeof actions], n: n ? Number(n) : 1 };
  });
}

const steps = fc.array(
  fc.record({
    p: fc.integer({ min: 0, max: 4 }),
    action: fc.constantFrom<Step['action']>('write', 'write', 'write', 'commit', 'abort'),
    n: fc.integer({ min: 1, max: 4 }),
  }),
  { minLength: 1, maxLength: 50 },
);

describe("kafkajs read_committed (patched): aborted transactions filtered as Kafka's Java consumer does", () => {
  const patched = from(copies.patched);

  it('a fetch returns exactly the committed and non-transactional records, for any interleaving and any fetch window', async () => {
    await fc.assert(
      fc.asyncProperty(steps, fc.array(fc.boolean(), { maxLength: 3 }), fc.nat(), fc.integer({ min: 1, max: 60 }), async (s, endings, at, take) => {
        const log = logOf(s, endings);
        fc.pre(log.end > 0);
        const { offsets, expected } = await fetchOf(patched, log, at % log.end, take);
        expect(offsets).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  // the issue's case: two producers' aborted transactions both began before the fetch offset
  const overlapping = stepsOf('0w2 1w2 2w2 0w2 1w2 2w2 0a 1a 2c');

  it('overlapping aborted transactions of two producers, read from the middle: none of their records', async () => {
    const log = logOf(overlapping, []);
    for (let start = 0; start < log.end; start++) {
      const { offsets, expected } = await fetchOf(patched, log, start, 100);
      expect(offsets, `fetch from ${start}`).toEqual(expected);
    }
    expect((await fetchOf(patched, log, 6, 100)).offsets).toEqual([10, 11]);
  });

  it('upstream kafkajs 2.2.4 delivers records of those aborted transactions (why the patch exists)', async () => {
    const { offsets, expected } = await fetchOf(from(copies.upstream), logOf(overlapping, []), 6, 100);
    expect(expected).toEqual([10, 11]);
    expect(offsets.filter((o) => !expected.includes(o)).length).toBeGreaterThan(0);
  });

  it("an abort marker ends only its own producer's aborted transaction; a commit marker ends none", async () => {
    // 0-1 A (aborted), 2-3 B (committed), 4 B commit marker, 5-6 A, 7 A abort marker, 8-9 A (committed), 10 commit
    const log = logOf(stepsOf('0w2 1w2 1c 0w2 0a 0w2 0c'), []);
    expect((await fetchOf(patched, log, 0, 100)).offsets).toEqual([2, 3, 8, 9]);
  });
});
