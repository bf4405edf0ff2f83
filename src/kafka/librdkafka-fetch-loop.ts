import type { KafkaConsumer, LibrdKafkaError, Message } from '@confluentinc/kafka-javascript';
import type { BatchRunner } from './librdkafka-batch-runner.ts';
import { fromLibrdkafka } from './librdkafka-errors.ts';
import type { PartitionQueues, PartitionState } from './librdkafka-partition-queues.ts';
import type { CaughtUp, Header, InRecord } from './ports.ts';

/** What the loop asks of the native consumer. */
export type FetchSource = Pick<KafkaConsumer, 'consume' | 'position'>;

/** a failed consume is tried again after this */
const CONSUME_RETRY_MS = 200;
/** a wait for room (backpressure) looks again after this, in case a wake-up was missed */
const ROOM_WAIT_MS = 1000;

export interface FetchLoopOptions {
  consumer: () => FetchSource | undefined;
  running: () => boolean;
  queues: PartitionQueues;
  runner: BatchRunner;
  maxBatchRecords: number;
  caughtUp?: CaughtUp;
  /** a fetch came back with records: the consumer is alive */
  fetched: () => void;
  /** a failed consume (logged and classified by the adapter) */
  onError: (err: LibrdKafkaError) => void;
  /** a fatal consume failure: the loop has stopped */
  crashed: (error: Error) => void;
}

/**
 * The consumer's own fetch loop: consume up to a batch's worth, read every owned partition's
 * position (between two consumes, when everything below it was dispatched), queue the records and
 * start the idle partitions' batches, report caught-up partitions. Backpressure: it stops fetching
 * while a few batches' worth wait (librdkafka's pause/resume would cost a fetch backoff of about a
 * second each time) and resumes when a batch settles (`wake`).
 */
export class FetchLoop {
  private readonly o: FetchLoopOptions;
  private room?: () => void;

  constructor(options: FetchLoopOptions) {
    this.o = options;
  }

  /** a batch settled: a loop waiting for room looks again */
  wake(): void {
    this.room?.();
  }

  async run(): Promise<void> {
    const { o } = this;
    for (let consumer = o.consumer(); o.running() && consumer; consumer = o.consumer()) {
      if (o.queues.full()) {
        await new Promise<void>((resolve) => {
          this.room = resolve;
          setTimeout(resolve, ROOM_WAIT_MS).unref();
        });
        this.room = undefined;
        continue;
      }
      let messages: Message[];
      try {
        messages = await new Promise<Message[]>((resolve, reject) => consumer!.consume(o.maxBatchRecords, (err, ms) => (err ? reject(err) : resolve(ms))));
      } catch (e) {
        o.onError(e as LibrdKafkaError);
        const error = fromLibrdkafka(e as LibrdKafkaError, 'consume');
        if (error.fatal) return o.crashed(error);
        await new Promise((r) => setTimeout(r, CONSUME_RETRY_MS));
        continue;
      }
      readPositions(consumer, o.queues.values());
      if (messages.length) {
        o.fetched();
        o.queues.push(messages.map(toRecord));
        o.runner.dispatch();
      }
      if (o.caughtUp) o.runner.reportCaughtUp(o.caughtUp);
    }
  }
}

/**
 * Each owned partition's position (librdkafka's application position: past every record
 * consume returned and every control record it skipped). Read only between two consume calls,
 * when every record below it has been dispatched.
 */
export function readPositions(consumer: Pick<KafkaConsumer, 'position'>, owned: Iterable<PartitionState>): void {
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

/** A fetched message as the ports' record: headers an ordered list (veil's binding patch keeps null values). */
export function toRecord(m: Message): InRecord {
  const headers: Header[] = [];
  for (const h of (m.headers ?? []) as Record<string, Buffer | null>[]) {
    for (const key of Object.keys(h)) headers.push({ key, value: h[key] ?? null });
  }
  return {
    topic: m.topic,
    partition: m.partition,
    offset: String(m.offset),
    key: (m.key as Buffer | null | undefined) ?? null,
    value: m.value ?? null,
    headers,
    timestamp: String(m.timestamp ?? 0),
  };
}
