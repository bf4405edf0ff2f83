import type { Assignment, LibrdKafkaError, Message } from '@confluentinc/kafka-javascript';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BatchRunner, CAUGHT_UP_RETRY_MS } from '../../src/kafka/librdkafka-batch-runner.ts';
import { FetchLoop, readPositions, toRecord } from '../../src/kafka/librdkafka-fetch-loop.ts';
import { PartitionQueues, RETRY_FIRST_MS, RETRY_MAX_MS } from '../../src/kafka/librdkafka-partition-queues.ts';
import { rebalancer } from '../../src/kafka/librdkafka-rebalance.ts';
import type { Batch, InRecord } from '../../src/kafka/index.ts';

const rec = (partition: number, offset: number, topic = 't'): InRecord => ({
  topic,
  partition,
  offset: String(offset),
  key: null,
  value: Buffer.from(`v${offset}`),
  headers: [],
  timestamp: '0',
});
const msg = (partition: number, offset: number): Message => ({
  topic: 't',
  partition,
  offset,
  value: Buffer.from(`v${offset}`),
  size: 2,
  timestamp: 0,
  key: null as never,
  headers: [{ h: Buffer.from('x') }, { n: null as never }],
});
const offsets = (b: Batch) => b.records.map((r) => Number(r.offset));
const log = () => undefined;

/** A stand-in for librdkafka's KafkaConsumer: scripted consume answers, positions and watermarks, and a record of assign calls. */
class FakeNative {
  answers: (Message[] | LibrdKafkaError)[] = [];
  consumes = 0;
  positions = new Map<string, number>();
  high = new Map<string, number>();
  assigned: Assignment[][] = [];
  unassigned = 0;
  committedOffsets = new Map<string, number>();
  pendingCommitted: (() => void)[] = [];
  consume(_n: number, cb: (err: LibrdKafkaError | null, ms: Message[]) => void) {
    this.consumes++;
    const next = this.answers.shift() ?? [];
    // a later turn of the event loop, as the binding's answer comes from a worker thread (never synchronously)
    setImmediate(() => (Array.isArray(next) ? cb(null, next) : cb(next, [])));
  }
  position(tps: { topic: string; partition: number }[]) {
    return tps.map((t) => ({ ...t, offset: this.positions.get(`${t.topic}/${t.partition}`) }));
  }
  getWatermarkOffsets(topic: string, partition: number) {
    return { highOffset: this.high.get(`${topic}/${partition}`) ?? -1, lowOffset: 0 };
  }
  assign(a: Assignment[]) {
    this.assigned.push(a);
  }
  unassign() {
    this.unassigned++;
  }
  committed(
    tps: { topic: string; partition: number }[],
    _timeout: number,
    cb: (err: unknown, tps: { topic: string; partition: number; offset?: number }[]) => void,
  ) {
    this.pendingCommitted.push(() =>
      cb(
        null,
        tps.map((t) => ({ ...t, offset: this.committedOffsets.get(`${t.topic}/${t.partition}`) ?? -1001 })),
      ),
    );
  }
  queryWatermarkOffsets(topic: string, partition: number, _timeout: number, cb: (err: unknown, w: { highOffset: number; lowOffset: number }) => void) {
    cb(null, { highOffset: this.high.get(`${topic}/${partition}`) ?? 0, lowOffset: 0 });
  }
}

/** A handler whose batches settle when the test says so. */
function controlledHandler() {
  const calls: { batch: Batch; resolve: () => void; reject: (e: Error) => void }[] = [];
  const handler = (batch: Batch) => new Promise<void>((resolve, reject) => calls.push({ batch, resolve, reject }));
  return { calls, handler };
}

const flush = () => new Promise((r) => setImmediate(r));

afterEach(() => {
  vi.useRealTimers();
});

describe('PartitionQueues: the owned partitions and what waits in each', () => {
  it('queues records of owned partitions only, hands out at most a batch, and counts what waits', () => {
    const q = new PartitionQueues(2);
    expect(
      q.own([
        { topic: 't', partition: 0 },
        { topic: 't', partition: 1 },
        { topic: 'u', partition: 0 },
      ]),
    ).toEqual({ t: [0, 1], u: [0] });
    q.push([rec(0, 1), rec(0, 2), rec(0, 3), rec(1, 7), rec(5, 1)]);
    expect(q.waiting).toBe(4);
    const [p0] = [...q.values()];
    expect(q.take(p0!).map((r) => r.offset)).toEqual(['1', '2']);
    expect([p0!.busy, q.waiting]).toEqual([true, 2]);
  });

  it('a failed batch goes back ahead of what was fetched behind it, with a doubling backoff up to the maximum', () => {
    const q = new PartitionQueues(10);
    q.own([{ topic: 't', partition: 0 }]);
    const [p] = [...q.values()];
    q.push([rec(0, 1), rec(0, 2)]);
    const batch = q.take(p!);
    q.push([rec(0, 3)]);
    const delays = Array.from({ length: 8 }, () => q.putBack(p!, []));
    expect(q.putBack(p!, batch) && p!.pending.map((r) => r.offset)).toEqual(['1', '2', '3']);
    expect(delays.slice(0, 3)).toEqual([RETRY_FIRST_MS, RETRY_FIRST_MS * 2, RETRY_FIRST_MS * 4]);
    expect(delays.at(-1)).toBe(RETRY_MAX_MS);
  });

  it('full at four batches waiting; a rebalance makes earlier states stale and empties the count', () => {
    const q = new PartitionQueues(2);
    q.own([{ topic: 't', partition: 0 }]);
    const [old] = [...q.values()];
    q.push([rec(0, 1), rec(0, 2), rec(0, 3), rec(0, 4), rec(0, 5), rec(0, 6), rec(0, 7)]);
    expect(q.full()).toBe(false);
    q.push([rec(0, 8)]);
    expect(q.full()).toBe(true);
    q.drop();
    expect([q.waiting, q.isCurrent(old!), [...q.values()].length]).toEqual([0, false, 0]);
  });

  it('offers the next full batch behind a busy partition once (LookAhead)', () => {
    const q = new PartitionQueues(2);
    const hints: string[][] = [];
    q.lookAhead = (_t, _p, records) => void hints.push(records.map((r) => r.offset));
    q.own([{ topic: 't', partition: 0 }]);
    const [p] = [...q.values()];
    q.push([rec(0, 1), rec(0, 2), rec(0, 3)]);
    q.take(p!);
    q.hint(p!);
    q.push([rec(0, 4)]);
    q.hint(p!);
    q.hint(p!);
    expect(hints).toEqual([['3', '4']]);
  });
});

describe('BatchRunner: one batch per partition at a time, retried from memory', () => {
  const setup = (max = 2) => {
    const q = new PartitionQueues(max);
    q.own([
      { topic: 't', partition: 0 },
      { topic: 't', partition: 1 },
    ]);
    const native = new FakeNative();
    const { calls, handler } = controlledHandler();
    let settled = 0;
    let now = 0;
    const runner = new BatchRunner({ queues: q, handler, consumer: () => native as never, log, settled: () => settled++, now: () => now });
    runner.running = true;
    return { q, native, calls, runner, settledCount: () => settled, setNow: (n: number) => (now = n) };
  };

  it("partitions run side by side; a partition's next batch starts only when its batch succeeded", async () => {
    const { q, calls, runner } = setup();
    q.push([rec(0, 1), rec(0, 2), rec(0, 3), rec(1, 10)]);
    runner.dispatch();
    expect(calls.map((c) => [c.batch.partition, offsets(c.batch)])).toEqual([
      [0, [1, 2]],
      [1, [10]],
    ]);
    runner.dispatch();
    expect(calls).toHaveLength(2);
    calls[0]!.resolve();
    await flush();
    expect(calls.map((c) => offsets(c.batch))).toEqual([[1, 2], [10], [3]]);
  });

  it('a failed batch is delivered again ahead of the records fetched behind it, after its backoff', async () => {
    vi.useFakeTimers();
    const { q, calls, runner } = setup(10);
    q.push([rec(0, 1), rec(0, 2)]);
    runner.dispatch();
    q.push([rec(0, 3)]);
    calls[0]!.reject(new Error('transaction aborted'));
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(RETRY_FIRST_MS);
    expect(calls.map((c) => offsets(c.batch))).toEqual([
      [1, 2],
      [1, 2, 3],
    ]);
  });

  it('the outcome of a batch of a revoked partition touches nothing of the new assignment', async () => {
    const { q, calls, runner } = setup();
    q.push([rec(0, 1)]);
    runner.dispatch();
    q.own([{ topic: 't', partition: 0 }]);
    calls[0]!.reject(new Error('fenced'));
    await flush();
    expect([q.waiting, [...q.values()][0]!.pending]).toEqual([0, []]);
  });

  it("a batch ends at the consumer's position when only markers follow it; its high watermark is librdkafka's", () => {
    const { q, native, calls, runner } = setup(10);
    const [p0] = [...q.values()];
    native.high.set('t/0', 9);
    q.push([rec(0, 4), rec(0, 5)]);
    p0!.position = 8n;
    runner.dispatch();
    expect(calls[0]!.batch).toMatchObject({ end: '8', highWatermark: '9' });
    expect(p0!.handedEnd).toBe(8n);
  });

  it('an idle partition whose position moved past the last batch is reported caught up; a refused report waits before it is tried again', async () => {
    const { q, runner, setNow } = setup();
    const [p0] = [...q.values()];
    p0!.position = 5n;
    p0!.handedEnd = 3n;
    const reports: string[] = [];
    let refuse = true;
    const caughtUp = async (at: { offset: string }) => {
      reports.push(at.offset);
      if (refuse) throw new Error('not now');
    };
    runner.reportCaughtUp(caughtUp);
    await flush();
    runner.reportCaughtUp(caughtUp);
    expect(reports).toEqual(['5']);
    setNow(CAUGHT_UP_RETRY_MS);
    refuse = false;
    runner.reportCaughtUp(caughtUp);
    await flush();
    runner.reportCaughtUp(caughtUp);
    expect([reports, p0!.handedEnd]).toEqual([['5', '5'], 5n]);
  });
});

describe('the rebalance callback', () => {
  const ASSIGN = { code: -175 } as LibrdKafkaError;
  const REVOKE = { code: -174 } as LibrdKafkaError;

  it('assigns and reports an assignment; a revocation drops the queues and unassigns', () => {
    const q = new PartitionQueues(2);
    const native = new FakeNative();
    const reported: Record<string, number[]>[] = [];
    const rebalance = rebalancer({ queues: q, latest: () => false, assigned: (a) => reported.push(a), log });
    rebalance(native as never, ASSIGN, [
      { topic: 't', partition: 0 },
      { topic: 't', partition: 2 },
    ]);
    q.push([rec(0, 1)]);
    rebalance(native as never, REVOKE, []);
    expect([native.assigned.length, native.unassigned, reported, q.waiting]).toEqual([1, 1, [{ t: [0, 2] }], 0]);
  });

  it('a group that starts at the latest offset assigns its committed offsets, else the ends, before it reports; a later rebalance overtakes it', async () => {
    const q = new PartitionQueues(2);
    const native = new FakeNative();
    native.committedOffsets.set('t/0', 40);
    native.high.set('t/1', 77);
    const reported: Record<string, number[]>[] = [];
    const rebalance = rebalancer({ queues: q, latest: () => true, assigned: (a) => reported.push(a), log });
    rebalance(native as never, ASSIGN, [
      { topic: 't', partition: 0 },
      { topic: 't', partition: 1 },
    ]);
    expect(reported).toEqual([]);
    native.pendingCommitted.shift()!();
    await flush();
    expect(native.assigned).toEqual([
      [
        { topic: 't', partition: 0, offset: 40 },
        { topic: 't', partition: 1, offset: 77 },
      ],
    ]);
    expect(reported).toEqual([{ t: [0, 1] }]);
    // resolving, then revoked: the late resolution assigns nothing
    rebalance(native as never, ASSIGN, [{ topic: 't', partition: 0 }]);
    rebalance(native as never, REVOKE, []);
    native.pendingCommitted.shift()!();
    await flush();
    expect(native.assigned).toHaveLength(1);
  });
});

describe('the fetch loop', () => {
  it('queues what it fetched, starts batches, reads positions between consumes, and stops when told', async () => {
    const q = new PartitionQueues(10);
    q.own([{ topic: 't', partition: 0 }]);
    const native = new FakeNative();
    native.answers = [[msg(0, 1), msg(0, 2)]];
    native.positions.set('t/0', 3);
    const { calls, handler } = controlledHandler();
    let running = true;
    const runner = new BatchRunner({
      queues: q,
      handler: async (b) => {
        await handler(b);
        running = false;
      },
      consumer: () => native as never,
      log,
      settled: () => undefined,
    });
    runner.running = true;
    let fetched = 0;
    const loop = new FetchLoop({
      consumer: () => native as never,
      running: () => running,
      queues: q,
      runner,
      maxBatchRecords: 10,
      fetched: () => fetched++,
      onError: () => undefined,
      crashed: () => undefined,
    });
    const done = loop.run();
    await vi.waitFor(() => expect(calls).toHaveLength(1));
    expect([offsets(calls[0]!.batch), fetched, [...q.values()][0]!.position]).toEqual([[1, 2], 1, 3n]);
    calls[0]!.resolve();
    await done;
  });

  it('stops fetching while four batches wait, and fetches again once one settles', async () => {
    const q = new PartitionQueues(1);
    q.own([{ topic: 't', partition: 0 }]);
    const native = new FakeNative();
    native.answers = [[msg(0, 1), msg(0, 2), msg(0, 3), msg(0, 4), msg(0, 5)]];
    const { calls, handler } = controlledHandler();
    let running = true;
    const wake = { loop: undefined as FetchLoop | undefined };
    const runner = new BatchRunner({ queues: q, handler, consumer: () => native as never, log, settled: () => wake.loop?.wake() });
    runner.running = true;
    const loop = (wake.loop = new FetchLoop({
      consumer: () => native as never,
      running: () => running,
      queues: q,
      runner,
      maxBatchRecords: 1,
      fetched: () => undefined,
      onError: () => undefined,
      crashed: () => undefined,
    }));
    const done = loop.run();
    await vi.waitFor(() => expect(calls).toHaveLength(1));
    await flush();
    const held = native.consumes;
    await flush();
    expect(native.consumes).toBe(held);
    calls[0]!.resolve();
    await vi.waitFor(() => expect(native.consumes).toBeGreaterThan(held));
    running = false;
    loop.wake();
    for (const c of calls) c.resolve();
    await done;
  });

  it('a fatal consume failure stops the loop and reports the crash; another is logged and tried again', async () => {
    const q = new PartitionQueues(1);
    const native = new FakeNative();
    native.answers = [
      Object.assign(new Error('transport'), { code: -195, isFatal: false }) as unknown as LibrdKafkaError,
      Object.assign(new Error('fenced'), { code: -150, isFatal: true }) as unknown as LibrdKafkaError,
    ];
    const errors: number[] = [];
    const crashes: Error[] = [];
    const runner = new BatchRunner({ queues: q, handler: async () => undefined, consumer: () => native as never, log, settled: () => undefined });
    await new FetchLoop({
      consumer: () => native as never,
      running: () => true,
      queues: q,
      runner,
      maxBatchRecords: 1,
      fetched: () => undefined,
      onError: (e) => errors.push(e.code),
      crashed: (e) => crashes.push(e),
    }).run();
    expect([errors, crashes.map((e) => (e as { fatal?: boolean }).fatal)]).toEqual([[-195, -150], [true]]);
  });

  it('positions unknown or unassigned change nothing; records keep their header order and null values', () => {
    const q = new PartitionQueues(1);
    q.own([{ topic: 't', partition: 0 }]);
    readPositions(
      {
        position: () => {
          throw new Error('not assigned');
        },
      } as never,
      q.values(),
    );
    expect([...q.values()][0]!.position).toBeUndefined();
    expect(toRecord(msg(0, 9)).headers).toEqual([
      { key: 'h', value: Buffer.from('x') },
      { key: 'n', value: null },
    ]);
  });
});
