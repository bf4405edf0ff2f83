import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import type { PartitionQueues, PartitionState } from './librdkafka-partition-queues.ts';
import type { Batch, CaughtUp, InRecord, KafkaLog } from './ports.ts';

export type Handler = (batch: Batch, heartbeat: () => Promise<void>) => Promise<void>;

/** What the runner reads of the native consumer: the watermarks librdkafka last fetched. */
export type WatermarkSource = Pick<KafkaConsumer, 'getWatermarkOffsets'>;

/** a caught-up offset that was not committed is tried again after this */
export const CAUGHT_UP_RETRY_MS = 1000;

/** The offset after a batch's last record. */
const next = (records: readonly InRecord[]): bigint => BigInt(records.at(-1)!.offset) + 1n;

/**
 * Runs each owned partition's batches, one at a time per partition and partitions side by side:
 * a batch that succeeds lets the partition's next one start; one that fails goes back ahead of
 * what was fetched behind it and is tried again after a backoff — not by seeking: the binding
 * seeks on a thread-pool worker while fetching goes on, so records behind the batch could be
 * delivered before the seek lands (and committed past the batch). An idle partition whose
 * position moved past the last batch (transaction markers behind it) is reported caught up, the
 * partition busy meanwhile. `settled` is told after each batch or report (the fetch loop's wake-up).
 */
export class BatchRunner {
  readonly inFlight = new Set<Promise<void>>();
  running = false;
  private readonly queues: PartitionQueues;
  private readonly handler: Handler;
  private readonly consumer: () => WatermarkSource | undefined;
  private readonly log: KafkaLog;
  private readonly settled: () => void;
  private readonly now: () => number;

  constructor(options: {
    queues: PartitionQueues;
    handler: Handler;
    consumer: () => WatermarkSource | undefined;
    log: KafkaLog;
    settled: () => void;
    now?: () => number;
  }) {
    this.queues = options.queues;
    this.handler = options.handler;
    this.consumer = options.consumer;
    this.log = options.log;
    this.settled = options.settled;
    this.now = options.now ?? Date.now;
  }

  /** Starts a batch of every idle partition with records waiting; offers the next batch of busy ones (LookAhead). */
  dispatch(): void {
    for (const state of this.queues.values()) {
      if (state.pending.length && !state.busy) this.run(state);
      else this.queues.hint(state);
    }
  }

  run(state: PartitionState): void {
    const records = this.queues.take(state);
    const highWatermark = this.highWatermarkAt(state, next(records));
    const end = batchEnd(state, records);
    state.handedEnd = end ?? next(records);
    const batch: Batch = { topic: state.topic, partition: state.partition, records, highWatermark, ...(end ? { end: end.toString() } : {}) };
    this.track(
      this.handler(batch, async () => undefined).then(
        () => this.succeeded(state),
        (e: unknown) => this.failed(state, records, e),
      ),
    );
    this.queues.hint(state);
  }

  /**
   * Reports every idle partition whose position moved past what was handed out to `caughtUp`;
   * one that was not taken waits CAUGHT_UP_RETRY_MS before it is reported again.
   */
  reportCaughtUp(caughtUp: CaughtUp): void {
    for (const state of this.queues.values()) {
      const at = state.position;
      if (state.busy || state.pending.length || at === undefined || (state.handedEnd !== undefined && at <= state.handedEnd) || this.now() < state.retryAt)
        continue;
      state.busy = true;
      const report = caughtUp({ topic: state.topic, partition: state.partition, offset: String(at), highWatermark: this.highWatermarkAt(state, at) })
        .then(
          () => void (state.handedEnd = at),
          () => void (state.retryAt = this.now() + CAUGHT_UP_RETRY_MS),
        )
        .finally(() => {
          state.busy = false;
          if (this.running && this.queues.isCurrent(state) && state.pending.length) this.run(state);
          this.settled();
        });
      this.track(report);
    }
  }

  private succeeded(state: PartitionState): void {
    state.busy = false;
    state.failures = 0;
    if (this.queues.isCurrent(state) && state.pending.length) this.run(state);
    this.settled();
  }

  private failed(state: PartitionState, records: InRecord[], e: unknown): void {
    this.settled();
    if (!this.queues.isCurrent(state)) {
      state.busy = false;
      return;
    }
    const delay = this.queues.putBack(state, records);
    this.log('warn', 'batch failed; it is tried again from its first record', {
      topic: state.topic,
      partition: state.partition,
      error: (e as Error).name,
      code: (e as { code?: string }).code,
      delayMs: delay,
    });
    setTimeout(() => {
      state.busy = false;
      if (this.running && this.queues.isCurrent(state) && state.pending.length) this.run(state);
    }, delay).unref();
  }

  private track(work: Promise<void>): void {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  /** The partition's high watermark as librdkafka last fetched it, else `atLeast` (not known yet). */
  private highWatermarkAt(state: PartitionState, atLeast: bigint): string {
    try {
      const high = this.consumer()?.getWatermarkOffsets(state.topic, state.partition).highOffset;
      if (typeof high === 'number' && high >= 0 && BigInt(high) >= atLeast) return String(high);
    } catch {
      // not known yet
    }
    return atLeast.toString();
  }
}

/**
 * A batch's end when the consumer's position is beyond its last record and nothing was fetched
 * behind it: the offsets between are markers and aborted records, committed with the batch.
 */
function batchEnd(state: PartitionState, records: readonly InRecord[]): bigint | undefined {
  if (state.pending.length || state.position === undefined) return undefined;
  return state.position > next(records) ? state.position : undefined;
}
