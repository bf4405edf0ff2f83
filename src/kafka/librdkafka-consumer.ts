import rdkafka from '@confluentinc/kafka-javascript';
import type { Assignment, KafkaConsumer, LibrdKafkaError, Message } from '@confluentinc/kafka-javascript';
import type { Batch, CaughtUp, ConsumerEvents, ConsumerPort, Header, InRecord, LookAhead } from './ports.ts';
import { CONNECT_TIMEOUT_MS, fromLibrdkafka } from './librdkafka-errors.ts';
import type { KafkaLog } from './ports.ts';

const { KafkaConsumer: NativeConsumer } = rdkafka as unknown as { KafkaConsumer: typeof KafkaConsumer };

/** The native consumer of each group in this process: transactions send their offsets with its group metadata (KIP-447). */
export type NativeConsumers = Map<string, KafkaConsumer>;

const ASSIGN = -175;
const REVOKE = -174;
/** how long one consume call waits for a first record */
const POLL_MS = 100;
/** a failed batch is tried again after this, doubling per failure in a row up to the maximum */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5000;
/** how long a disconnect waits for the batches in flight */
const DISCONNECT_WAIT_MS = 10_000;
/** a caught-up offset that was not committed is tried again after this */
const CAUGHT_UP_RETRY_MS = 1000;

type Handler = (batch: Batch, heartbeat: () => Promise<void>) => Promise<void>;

/** One owned partition: the batch in flight and the records fetched behind it. */
interface PartitionState {
  topic: string;
  partition: number;
  /** a batch is in flight, or a failed one waits to be tried again */
  busy: boolean;
  pending: InRecord[];
  /** failures in a row of this partition's batch: the retry backs off */
  failures: number;
  /** the records behind the batch in flight were offered as the next batch (LookAhead) */
  hinted: boolean;
  /**
   * the consumer's position as read after the last consume, when known: every record below it was
   * dispatched (into `pending`, or a batch); what lies between those records and it is what
   * read_committed skips — transaction markers, aborted records
   */
  position?: bigint;
  /** where the last batch handed out, or the last caught-up offset reported, ended */
  handedEnd?: bigint;
  /** a failed caught-up report waits until then */
  retryAt: number;
}

interface Options {
  /** librdkafka's properties every client of the port shares (brokers, security) */
  common: Record<string, unknown>;
  groupId: string;
  readCommitted: boolean;
  registry: NativeConsumers;
  log: KafkaLog;
  /** the consumer's error events and failed fetches: logged, a refusal of this client reported (librdkafka-adapter.ts clientError) */
  onError: (err: LibrdKafkaError) => void;
  /** the consumer's log lines (librdkafka-adapter.ts clientLog): a refusal's reason is only there */
  onLog: (line: { severity: number; fac: string; message: string }) => void;
  sessionTimeoutMs: number;
  groupInstanceId?: string;
  maxBatchRecords: number;
}

/**
 * A ConsumerPort over librdkafka's KafkaConsumer with its own fetch loop: every owned partition
 * runs one batch at a time, and partitions run side by side — a batch waits only for the
 * previous batch of its own partition. Records fetched behind a busy partition wait in order; a
 * failed batch is delivered again from memory, ahead of them, after a backoff (the consumer's
 * position never moves back, so nothing behind the batch can overtake it). Backpressure: the loop stops fetching while more than a few batches' worth
 * wait (librdkafka's pause/resume would cost a fetch backoff of about a second each time).
 */
export function librdkafkaConsumer(options: Options): ConsumerPort {
  let native: KafkaConsumer | undefined;
  let events: ConsumerEvents = {};
  let latest = false;
  let running = false;
  let loop: Promise<void> | undefined;
  let states = new Map<string, PartitionState>();
  const inFlight = new Set<Promise<void>>();
  let waiting = 0;
  let batchDone: (() => void) | undefined;
  const maxWaiting = options.maxBatchRecords * 4;
  const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;

  let generation = 0;
  const owned = (assignment: Assignment[]) => {
    states = new Map(assignment.map((a) => [keyOf(a.topic, a.partition), { topic: a.topic, partition: a.partition, busy: false, pending: [], failures: 0, hinted: false, retryAt: 0 }]));
    waiting = 0;
    const byTopic: Record<string, number[]> = {};
    for (const a of assignment) (byTopic[a.topic] ??= []).push(a.partition);
    events.assigned?.(byTopic);
  };
  const rebalance = (consumer: KafkaConsumer, err: LibrdKafkaError, assignment: Assignment[]) => {
    const current = ++generation;
    try {
      if (err.code === ASSIGN && latest) {
        // "latest" is resolved by librdkafka only at the first fetch: a record written between
        // the assignment and that fetch would be skipped. Resolve it now, then assign and report.
        void startPositions(consumer, assignment).then((positioned) => {
          if (current !== generation) return;
          consumer.assign(positioned);
          owned(assignment);
        }, (e: unknown) => options.log('warn', 'cannot resolve start offsets', { code: (e as { code?: string }).code }));
      } else if (err.code === ASSIGN) {
        consumer.assign(assignment);
        owned(assignment);
      } else if (err.code === REVOKE) {
        // batches in flight finish or fail on their own; KIP-447 refuses their offsets once the
        // generation moved on, and the partition's next owner fences their transactional id
        states = new Map();
        waiting = 0;
        consumer.unassign();
      }
    } catch (e) {
      options.log('warn', 'rebalance failed', { error: (e as Error).name, code: (e as { code?: unknown }).code });
    }
  };

  let lookAhead: LookAhead | undefined;
  let caughtUp: CaughtUp | undefined;
  // Once a full batch waits behind the one in flight, it is offered as the partition's next: its
  // protection can run while the current batch's transaction commits
  const hint = (state: PartitionState) => {
    if (!lookAhead || state.hinted || !state.busy || state.pending.length < options.maxBatchRecords) return;
    state.hinted = true;
    lookAhead(state.topic, state.partition, state.pending.slice(0, options.maxBatchRecords));
  };

  const runBatch = (state: PartitionState, handler: Handler) => {
    const records = state.pending.splice(0, options.maxBatchRecords);
    const current = () => states.get(keyOf(state.topic, state.partition)) === state;
    if (current()) waiting -= records.length;
    state.busy = true;
    const consumer = native!;
    const highWatermark = watermark(consumer, state, records);
    const end = batchEnd(state, records);
    state.handedEnd = BigInt(end ?? next(records));
    const work = handler({ topic: state.topic, partition: state.partition, records, highWatermark, ...(end ? { end } : {}) }, async () => undefined).then(
      () => {
        state.busy = false;
        state.failures = 0;
        if (current() && state.pending.length) runBatch(state, handler);
        batchDone?.();
      },
      (e: unknown) => {
        batchDone?.();
        if (!current()) {
          state.busy = false;
          return;
        }
        // read again from memory, in order, ahead of what was fetched behind it. Not a seek: the
        // binding seeks on a thread-pool worker while the fetch loop goes on, so records behind
        // the batch could be delivered before the seek lands (and committed past the batch)
        state.pending = records.concat(state.pending);
        waiting += records.length;
        const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** state.failures++);
        options.log('warn', 'batch failed; it is tried again from its first record', { topic: state.topic, partition: state.partition, error: (e as Error).name, code: (e as { code?: string }).code, delayMs: delay });
        setTimeout(() => {
          state.busy = false;
          if (running && current() && state.pending.length) runBatch(state, handler);
        }, delay).unref();
      },
    );
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
    state.hinted = false;
    hint(state);
  };

  const dispatch = (messages: Message[], handler: Handler) => {
    for (const m of messages) {
      const state = states.get(keyOf(m.topic, m.partition));
      if (!state) continue; // fetched before a revocation
      state.pending.push(toRecord(m));
      waiting++;
    }
    for (const state of states.values()) {
      if (state.pending.length && !state.busy) runBatch(state, handler);
      else hint(state);
    }
  };

  const fetchLoop = async (handler: Handler) => {
    while (running && native) {
      if (waiting >= maxWaiting) {
        // a batch finishing wakes this; the timeout only guards against a missed wake-up
        await new Promise<void>((resolve) => {
          batchDone = resolve;
          setTimeout(resolve, 1000).unref();
        });
        batchDone = undefined;
        continue;
      }
      const consumer = native;
      let messages: Message[];
      try {
        messages = await new Promise<Message[]>((resolve, reject) => consumer.consume(options.maxBatchRecords, (err, ms) => (err ? reject(err) : resolve(ms))));
      } catch (e) {
        const error = fromLibrdkafka(e as LibrdKafkaError, 'consume');
        options.onError(e as LibrdKafkaError);
        if (error.fatal) {
          events.crashed?.(error, false);
          return;
        }
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      readPositions(consumer, states.values());
      if (messages.length) {
        events.fetched?.();
        dispatch(messages, handler);
      }
      if (caughtUp) reportCaughtUp(consumer, caughtUp, handler);
    }
  };

  // An idle partition whose position moved past the last batch handed out (transaction markers
  // behind it): reported like a batch — the partition is busy meanwhile, records fetched behind it wait
  const reportCaughtUp = (consumer: KafkaConsumer, report: CaughtUp, handler: Handler) => {
    for (const state of states.values()) {
      const at = state.position;
      if (state.busy || state.pending.length || at === undefined || (state.handedEnd !== undefined && at <= state.handedEnd) || Date.now() < state.retryAt) continue;
      state.busy = true;
      const current = () => states.get(keyOf(state.topic, state.partition)) === state;
      const work = report({ topic: state.topic, partition: state.partition, offset: String(at), highWatermark: highWatermarkAt(consumer, state, at) }).then(
        () => void (state.handedEnd = at),
        () => void (state.retryAt = Date.now() + CAUGHT_UP_RETRY_MS),
      ).finally(() => {
        state.busy = false;
        if (running && current() && state.pending.length) runBatch(state, handler);
        batchDone?.();
      });
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    }
  };

  return {
    async subscribe(topics, fromBeginning = true) {
      latest = !fromBeginning;
      const consumer = new NativeConsumer({
        ...options.common,
        'group.id': options.groupId,
        ...(options.groupInstanceId ? { 'group.instance.id': options.groupInstanceId } : {}),
        'enable.auto.commit': false,
        'enable.auto.offset.store': false,
        'isolation.level': options.readCommitted ? 'read_committed' : 'read_uncommitted',
        'session.timeout.ms': options.sessionTimeoutMs,
        'heartbeat.interval.ms': Math.max(500, Math.floor(options.sessionTimeoutMs / 10)),
        'allow.auto.create.topics': false,
        'fetch.wait.max.ms': 100,
        'statistics.interval.ms': 1000,
        rebalance_cb: function (this: KafkaConsumer, err: LibrdKafkaError, assignment: Assignment[]) {
          rebalance(this, err, assignment);
        },
      } as never, { 'auto.offset.reset': fromBeginning ? 'earliest' : 'latest' });
      consumer.setDefaultConsumeTimeout(POLL_MS);
      (consumer as unknown as { setDefaultIsTimeoutOnlyForFirstMessage(v: boolean): void }).setDefaultIsTimeoutOnlyForFirstMessage(true);
      consumer.on('event.error', options.onError);
      consumer.on('event.log', options.onLog);
      (consumer as unknown as NodeJS.EventEmitter).on('error', options.onError);
      // alive and in its group: the liveness signal kafkajs gives with every (also empty) fetch
      consumer.on('event.stats', (stats: { message: string }) => {
        try {
          if ((JSON.parse(stats.message) as { cgrp?: { state?: string } }).cgrp?.state === 'up') events.fetched?.();
        } catch {
          // a statistics line that does not parse says nothing about liveness
        }
      });
      await new Promise<void>((resolve, reject) => consumer.connect({ timeout: CONNECT_TIMEOUT_MS }, (err) => (err ? reject(fromLibrdkafka(err, 'consumer connect')) : resolve())));
      consumer.subscribe(topics instanceof RegExp ? [subscriptionPattern(topics)] : [...topics]);
      native = consumer;
      options.registry.set(options.groupId, consumer);
    },
    async run(handler, ahead, reportCaughtUpTo) {
      if (!native) throw new Error('subscribe first');
      lookAhead = ahead;
      caughtUp = reportCaughtUpTo;
      running = true;
      loop = fetchLoop(handler);
    },
    async commitOffsets(topic, partition, offset) {
      const consumer = native;
      if (!consumer) throw new Error('not subscribed');
      await new Promise<void>((resolve, reject) => (consumer as unknown as { commitCb(t: unknown, cb: (err: LibrdKafkaError | null) => void): void })
        .commitCb([{ topic, partition, offset: Number(offset) }], (err) => (err ? reject(fromLibrdkafka(err, 'commit')) : resolve())));
    },
    async disconnect() {
      running = false;
      await loop;
      // batches in flight finish first, unless one is stuck: the member leaves its group regardless
      // (a member that stays, no longer fetching, would keep partitions after the next rebalance)
      await Promise.race([Promise.allSettled([...inFlight]), new Promise((r) => setTimeout(r, DISCONNECT_WAIT_MS).unref())]);
      const consumer = native;
      native = undefined;
      if (options.registry.get(options.groupId) === consumer) options.registry.delete(options.groupId);
      if (consumer) await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
    },
    on(e) {
      events = { ...events, ...e };
    },
  };
}

/** Each partition's committed offset, else its end (a new group that starts at the latest offset). */
async function startPositions(consumer: KafkaConsumer, assignment: Assignment[]): Promise<Assignment[]> {
  const committed = await new Promise<{ topic: string; partition: number; offset?: number }[]>((resolve, reject) =>
    consumer.committed(assignment.map(({ topic, partition }) => ({ topic, partition })), 10_000, (err, tps) => (err ? reject(err) : resolve(tps))));
  return Promise.all(assignment.map(async ({ topic, partition }) => {
    const offset = committed.find((c) => c.topic === topic && c.partition === partition)?.offset;
    if (offset !== undefined && offset >= 0) return { topic, partition, offset };
    const end = await new Promise<number>((resolve, reject) => consumer.queryWatermarkOffsets(topic, partition, 10_000, (err, w) => (err ? reject(err) : resolve(w.highOffset))));
    return { topic, partition, offset: end };
  }));
}

/** librdkafka treats a subscription starting with ^ as a regular expression. */
function subscriptionPattern(re: RegExp): string {
  return re.source.startsWith('^') ? re.source : `^.*(?:${re.source})`;
}

/** The offset after a batch's last record. */
const next = (records: readonly InRecord[]): string => (BigInt(records.at(-1)!.offset) + 1n).toString();

function watermark(consumer: KafkaConsumer, state: PartitionState, records: InRecord[]): string {
  return highWatermarkAt(consumer, state, BigInt(next(records)));
}

/** The partition's high watermark as librdkafka last fetched it, else `atLeast` (not known yet). */
function highWatermarkAt(consumer: KafkaConsumer, state: PartitionState, atLeast: bigint): string {
  try {
    const high = consumer.getWatermarkOffsets(state.topic, state.partition).highOffset;
    if (typeof high === 'number' && high >= 0 && BigInt(high) >= atLeast) return String(high);
  } catch {
    // not known yet
  }
  return atLeast.toString();
}

/**
 * Each owned partition's position (librdkafka's application position: past every record
 * consume returned and every control record it skipped). Read only between two consume calls,
 * when every record below it has been dispatched.
 */
function readPositions(consumer: KafkaConsumer, owned: Iterable<PartitionState>): void {
  const list = [...owned];
  if (!list.length) return;
  let positions: { topic: string; partition: number; offset?: number }[];
  try {
    positions = consumer.position(list.map(({ topic, partition }) => ({ topic, partition })));
  } catch {
    return; // not assigned (any more): nothing known
  }
  const byKey = new Map(positions.map((p) => [`${p.topic}\u0000${p.partition}`, p.offset]));
  for (const state of list) {
    const offset = byKey.get(`${state.topic}\u0000${state.partition}`);
    if (typeof offset === 'number' && offset >= 0) state.position = BigInt(offset);
  }
}

/**
 * A batch's end when the consumer's position is beyond its last record and nothing was fetched
 * behind it: the offsets between are markers and aborted records, committed with the batch.
 */
function batchEnd(state: PartitionState, records: readonly InRecord[]): string | undefined {
  if (state.pending.length || state.position === undefined) return undefined;
  return state.position > BigInt(next(records)) ? state.position.toString() : undefined;
}

function toRecord(m: Message): InRecord {
  const headers: Header[] = [];
  for (const h of (m.headers ?? []) as Record<string, Buffer | null>[]) {
    for (const key of Object.keys(h)) headers.push({ key, value: h[key] ?? null });
  }
  return {
    topic: m.topic, partition: m.partition, offset: String(m.offset),
    key: (m.key as Buffer | null | undefined) ?? null, value: m.value ?? null,
    headers, timestamp: String(m.timestamp ?? 0),
  };
}
