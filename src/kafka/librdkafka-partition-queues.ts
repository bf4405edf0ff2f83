import type { InRecord, LookAhead } from './ports.ts';

/** a failed batch is tried again after this, doubling per failure in a row up to the maximum */
export const RETRY_FIRST_MS = 100;
export const RETRY_MAX_MS = 5000;

/** One owned partition: the batch in flight and the records fetched behind it. */
export interface PartitionState {
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

const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/**
 * The partitions this member owns, each a queue of fetched records in offset order: records wait
 * behind the partition's batch in flight, a failed batch goes back ahead of them, and `waiting`
 * counts what is queued across partitions for backpressure. A rebalance replaces the states: a
 * state no longer `current` belongs to an earlier assignment, and its batch's outcome touches no
 * queue of the new one.
 */
export class PartitionQueues {
  private states = new Map<string, PartitionState>();
  /** records queued, not handed out, across owned partitions */
  waiting = 0;
  private readonly maxBatchRecords: number;
  lookAhead?: LookAhead;

  constructor(maxBatchRecords: number) {
    this.maxBatchRecords = maxBatchRecords;
  }

  /** An assignment: a fresh state per partition, nothing queued; the partitions by topic. */
  own(assignment: readonly { topic: string; partition: number }[]): Record<string, number[]> {
    this.states = new Map(
      assignment.map((a) => [
        keyOf(a.topic, a.partition),
        { topic: a.topic, partition: a.partition, busy: false, pending: [], failures: 0, hinted: false, retryAt: 0 },
      ]),
    );
    this.waiting = 0;
    const byTopic: Record<string, number[]> = {};
    for (const a of assignment) (byTopic[a.topic] ??= []).push(a.partition);
    return byTopic;
  }

  /** A revocation: nothing owned; batches in flight finish or fail on their own. */
  drop(): void {
    this.states = new Map();
    this.waiting = 0;
  }

  values(): IterableIterator<PartitionState> {
    return this.states.values();
  }

  /** whether `state` is of the current assignment */
  isCurrent(state: PartitionState): boolean {
    return this.states.get(keyOf(state.topic, state.partition)) === state;
  }

  /** Queues fetched records behind their partition's; records of partitions not owned (fetched before a revocation) are dropped. */
  push(records: readonly InRecord[]): void {
    for (const r of records) {
      const state = this.states.get(keyOf(r.topic, r.partition));
      if (!state) continue;
      state.pending.push(r);
      this.waiting++;
    }
  }

  /** The partition's next batch, taken off its queue; the partition is busy until it settles. */
  take(state: PartitionState): InRecord[] {
    const records = state.pending.splice(0, this.maxBatchRecords);
    if (this.isCurrent(state)) this.waiting -= records.length;
    state.busy = true;
    state.hinted = false;
    return records;
  }

  /** A failed batch back ahead of what was fetched behind it, in order; the delay before it is tried again. */
  putBack(state: PartitionState, records: readonly InRecord[]): number {
    state.pending = [...records, ...state.pending];
    this.waiting += records.length;
    return Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** state.failures++);
  }

  /** whether fetching should pause: a few batches' worth wait */
  full(): boolean {
    return this.waiting >= this.maxBatchRecords * 4;
  }

  /**
   * Once a full batch waits behind the one in flight, it is offered as the partition's next
   * (LookAhead): its protection can run while the current batch's transaction commits.
   */
  hint(state: PartitionState): void {
    if (!this.lookAhead || state.hinted || !state.busy || state.pending.length < this.maxBatchRecords) return;
    state.hinted = true;
    this.lookAhead(state.topic, state.partition, state.pending.slice(0, this.maxBatchRecords));
  }
}
