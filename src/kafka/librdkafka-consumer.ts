import rdkafka from '@confluentinc/kafka-javascript';
import type { Assignment, KafkaConsumer, LibrdKafkaError } from '@confluentinc/kafka-javascript';
import { BatchRunner, type Handler } from './librdkafka-batch-runner.ts';
import { CONNECT_TIMEOUT_MS, fromLibrdkafka } from './librdkafka-errors.ts';
import { FetchLoop } from './librdkafka-fetch-loop.ts';
import { PartitionQueues } from './librdkafka-partition-queues.ts';
import { rebalancer } from './librdkafka-rebalance.ts';
import type { ConsumerEvents, ConsumerPort, KafkaLog } from './ports.ts';

const { KafkaConsumer: NativeConsumer } = rdkafka as unknown as { KafkaConsumer: typeof KafkaConsumer };

/** The native consumer of each group in this process: transactions send their offsets with its group metadata (KIP-447). */
export type NativeConsumers = Map<string, KafkaConsumer>;

/** how long one consume call waits for a first record */
const POLL_MS = 100;
/** how long a disconnect waits for the batches in flight */
const DISCONNECT_WAIT_MS = 10_000;

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
 * A ConsumerPort over librdkafka's KafkaConsumer, in four parts a reader can hold one at a time:
 * the owned partitions' queues (librdkafka-partition-queues.ts), the batches run per partition
 * with their retries and caught-up reports (librdkafka-batch-runner.ts), the rebalance callback
 * (librdkafka-rebalance.ts) and the fetch loop (librdkafka-fetch-loop.ts). Every owned partition
 * runs one batch at a time, and partitions run side by side — a batch waits only for the
 * previous batch of its own partition; a failed batch is delivered again from memory, ahead of
 * what was fetched behind it. This file makes the native consumer and puts the parts together.
 */
export function librdkafkaConsumer(options: Options): ConsumerPort {
  let native: KafkaConsumer | undefined;
  let events: ConsumerEvents = {};
  let latest = false;
  let loop: Promise<void> | undefined;
  let runner: BatchRunner | undefined;
  let fetcher: FetchLoop | undefined;
  const queues = new PartitionQueues(options.maxBatchRecords);
  const rebalance = rebalancer({ queues, latest: () => latest, assigned: (byTopic) => events.assigned?.(byTopic), log: options.log });
  return {
    async subscribe(topics, fromBeginning = true) {
      latest = !fromBeginning;
      const consumer = nativeConsumer(options, fromBeginning, rebalance);
      consumer.on('event.error', options.onError);
      consumer.on('event.log', options.onLog);
      // the OAUTHBEARER token callback's failures arrive as 'error' (an EventEmitter error without a listener would throw)
      (consumer as unknown as NodeJS.EventEmitter).on('error', options.onError);
      // alive and in its group: the liveness signal kafkajs gives with every (also empty) fetch
      consumer.on('event.stats', (stats: { message: string }) => {
        try {
          if ((JSON.parse(stats.message) as { cgrp?: { state?: string } }).cgrp?.state === 'up') events.fetched?.();
        } catch {
          // a statistics line that does not parse says nothing about liveness
        }
      });
      await new Promise<void>((resolve, reject) =>
        consumer.connect({ timeout: CONNECT_TIMEOUT_MS }, (err) => (err ? reject(fromLibrdkafka(err, 'consumer connect')) : resolve())),
      );
      consumer.subscribe(topics instanceof RegExp ? [subscriptionPattern(topics)] : [...topics]);
      native = consumer;
      options.registry.set(options.groupId, consumer);
    },
    async run(handler: Handler, ahead, caughtUp) {
      if (!native) throw new Error('subscribe first');
      queues.lookAhead = ahead;
      runner = new BatchRunner({ queues, handler, consumer: () => native, log: options.log, settled: () => fetcher?.wake() });
      runner.running = true;
      fetcher = new FetchLoop({
        consumer: () => native,
        running: () => runner?.running === true,
        queues,
        runner,
        maxBatchRecords: options.maxBatchRecords,
        ...(caughtUp ? { caughtUp } : {}),
        fetched: () => events.fetched?.(),
        onError: options.onError,
        crashed: (error) => events.crashed?.(error, false),
      });
      loop = fetcher.run();
    },
    async commitOffsets(topic, partition, offset) {
      const consumer = native;
      if (!consumer) throw new Error('not subscribed');
      await new Promise<void>((resolve, reject) =>
        (consumer as unknown as { commitCb(t: unknown, cb: (err: LibrdKafkaError | null) => void): void }).commitCb(
          [{ topic, partition, offset: Number(offset) }],
          (err) => (err ? reject(fromLibrdkafka(err, 'commit')) : resolve()),
        ),
      );
    },
    async disconnect() {
      if (runner) runner.running = false;
      await loop;
      // batches in flight finish first, unless one is stuck: the member leaves its group regardless
      // (a member that stays, no longer fetching, would keep partitions after the next rebalance)
      await Promise.race([Promise.allSettled([...(runner?.inFlight ?? [])]), new Promise((r) => setTimeout(r, DISCONNECT_WAIT_MS).unref())]);
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

/** The native consumer of the options: manual commits (in transactions), read_committed, the rebalance callback. */
function nativeConsumer(options: Options, fromBeginning: boolean, rebalance: ReturnType<typeof rebalancer>): KafkaConsumer {
  const consumer = new NativeConsumer(
    {
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
    } as never,
    { 'auto.offset.reset': fromBeginning ? 'earliest' : 'latest' },
  );
  consumer.setDefaultConsumeTimeout(POLL_MS);
  (consumer as unknown as { setDefaultIsTimeoutOnlyForFirstMessage(v: boolean): void }).setDefaultIsTimeoutOnlyForFirstMessage(true);
  return consumer;
}

/** librdkafka treats a subscription starting with ^ as a regular expression. */
function subscriptionPattern(re: RegExp): string {
  return re.source.startsWith('^') ? re.source : `^.*(?:${re.source})`;
}
