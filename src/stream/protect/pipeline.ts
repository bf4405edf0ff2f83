import { VeilError, type Engine } from '../../engine/index.ts';
import type { PipelineConfig } from '../config/index.ts';
import { BatchTally } from './batch-tally.ts';
import { CleanHeaders } from './clean-headers.ts';
import { Liveness, type LivenessStatus, type ReadinessStatus } from './liveness.ts';
import { PartitionTransactions } from './partition-transactions.ts';
import { ProtectAhead } from './protect-ahead.ts';
import { RecordProtector, type ChunkOutcome, type ChunkProtector } from './record-protector.ts';
import type { SubjectKeyStore } from '../../subjects/index.ts';
import {
  headerValue,
  withHeaders,
  type Batch,
  type ConsumerPort,
  type InRecord,
  type KafkaPort,
  type OutRecord,
  type ProducerPort,
} from '../../kafka/index.ts';
import { fitsAlone } from '../../kafka/index.ts';
import type { Serde } from '../serde/index.ts';
import { SchemaRefusals, type RefusedSchema } from './schema-refusals.ts';
import { openWithRetry } from '../../kafka/index.ts';
import { StreamError } from '../stream-error.ts';
import type { StreamMetrics } from './stream-metrics.ts';
import { BatchTrace, TRACING_OFF, type Tracing } from '../../observability/index.ts';
import type { StreamLog } from '../log.ts';

export interface PipelineDeps {
  name: string;
  config: PipelineConfig;
  configVersion: string;
  engine: Engine;
  kafka: KafkaPort;
  serde: Serde;
  metrics: StreamMetrics;
  log: StreamLog;
  /** protects chunks of records elsewhere (a worker-thread pool); default: in this thread */
  protector?: ChunkProtector;
  /** the subject-key store, for fields whose keys are scoped to the data subject (such pipelines protect in this thread) */
  subjects?: SubjectKeyStore;
  /** re-protect (veil stream rewrap): values are unprotected with these evidences, then protected */
  rewrap?: { unprotectEvidences: Record<string, string> };
  /** a batch in flight this long while Kafka answers: unhealthy; no progress this long: not ready (default 60 s); recovery at half */
  stallMs?: number;
  /** how long start() waits for a broker it cannot reach yet (default 60 s) */
  startTimeoutMs?: number;
  now?: () => number;
  /** a span per transaction and per record that names a trace (BatchTrace); default off */
  tracing?: Tracing;
}

const utf8 = (s: string) => Buffer.from(s, 'utf8');

/** What a running pipeline cannot change without re-creating its consumer and producers. */
const RESTART_ONLY = ['source', 'sink', 'format', 'deadLetterTopic', 'delivery', 'groupId'] as const;

/** records protected between two sends */
const CHUNK = 1000;

/** Lag as Kafka's tools compute it: the high watermark minus the group's committed offset (never below 0). */
const lagOf = (highWatermark: string, committed: string): number => Math.max(0, Number(BigInt(highWatermark) - BigInt(committed)));

/**
 * Consume → protect → produce for one pipeline. Exactly-once (default): the transaction
 * lifecycle — fencing, one transaction per batch, abort and disposal — is PartitionTransactions';
 * this class protects records and decides where each goes. At-least-once: idempotent sends, then
 * an offset commit. A record that cannot be protected, or whose protected form the clean topic
 * would refuse, goes to the dead-letter topic, never to the clean one; a retriable failure
 * (registry, broker) aborts the batch, which is read again; a dead letter that cannot be written
 * halts the pipeline — nothing is ever skipped.
 */
export class ProtectPipeline {
  readonly name: string;
  readonly groupId: string;
  private readonly deps: PipelineDeps;
  private chunks: ChunkProtector;
  private readonly transactions: PartitionTransactions;
  private readonly liveness: Liveness;
  private plainProducer?: Promise<ProducerPort>;
  private consumer?: ConsumerPort;
  /** frozen lists: records without headers of their own carry one of them (an adapter may encode each once) */
  private veilHeaders: CleanHeaders;
  private rename?: RegExp;
  private watchdog?: NodeJS.Timeout;
  private readonly ahead: ProtectAhead;
  /** how long a recovery waits for the batches in flight before it abandons their producers */
  private readonly closeWaitMs: number;
  private stopped = false;
  private recovering?: Promise<void>;
  /** batches running now, and a configuration change waiting for them (follow) */
  private readonly inFlight = new Set<Promise<void>>();
  private switching?: Promise<void>;
  /** unmapped findings already logged (path NUL kind) */
  private readonly warned = new Set<string>();
  /** writer's schema versions refused for lacking a mapped path (SCHEMA_PATH_UNKNOWN) */
  private readonly refusals: SchemaRefusals;
  private readonly tracing: Tracing;

  constructor(deps: PipelineDeps) {
    this.deps = deps;
    this.name = deps.name;
    const c = deps.config;
    this.groupId = c.groupId ?? `veil-protect-${deps.name}`;
    // authorization happens once, here, in this thread: a pipeline whose identity may not
    // protect its fields does not start (a worker pool binds the same fields again)
    const inline = new RecordProtector({
      name: deps.name,
      config: c,
      engine: deps.engine,
      serde: deps.serde,
      ...this.rewrapOf(),
      ...(deps.subjects ? { subjects: deps.subjects } : {}),
    });
    this.chunks = deps.protector ?? inline;
    this.veilHeaders = new CleanHeaders(deps.name, c, deps.configVersion);
    this.transactions = new PartitionTransactions(deps.kafka, this.groupId, (event, fields) =>
      deps.log.debug?.({ pipeline: deps.name, ...fields }, `transaction ${event}`),
    );
    const stallMs = deps.stallMs ?? 60_000;
    this.closeWaitMs = Math.min(10_000, Math.floor(stallMs / 2));
    this.ahead = new ProtectAhead(CHUNK, (records) =>
      this.chunks.protectChunk(records.map((r) => ({ topic: this.sinkTopic(r.topic), key: r.key, value: r.value }))),
    );
    this.liveness = new Liveness({ stallMs, recoverMs: Math.floor(stallMs / 2), now: deps.now ?? Date.now });
    this.refusals = new SchemaRefusals(deps.name, deps.metrics, deps.log);
    this.tracing = deps.tracing ?? TRACING_OFF;
  }

  async start(): Promise<void> {
    this.stopped = false;
    await openWithRetry(() => this.openConsumer(), {
      timeoutMs: this.deps.startTimeoutMs ?? 60_000,
      stopped: () => this.stopped,
      onRetry: (e, inMs) => this.deps.log.warn({ pipeline: this.deps.name, error: e.name, retryInMs: inMs }, 'Kafka cannot be reached yet; trying again'),
      reset: async () => {
        const half = this.consumer;
        this.consumer = undefined;
        await half?.disconnect().catch(() => undefined);
      },
    });
    this.watchdog = setInterval(() => {
      if (this.liveness.tick()) void this.recover('no progress');
    }, 1000);
    this.watchdog.unref();
  }

  /** Stops consuming (the batch in flight finishes or aborts), then closes the producers. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.watchdog);
    await this.recovering;
    await this.consumer?.disconnect();
    await this.transactions.closeAll();
    if (this.plainProducer) await (await this.plainProducer).disconnect().catch(() => undefined);
    this.ahead.clear();
  }

  /** a rewrap's unprotect evidences, counting the values of erased data subjects it carries through unchanged */
  private rewrapOf(): { rewrap?: { unprotectEvidences: Record<string, string>; erasedKept: (count: number) => void } } {
    const rewrap = this.deps.rewrap;
    if (!rewrap) return {};
    return { rewrap: { ...rewrap, erasedKept: (count) => this.deps.metrics.erasedKept.inc({ pipeline: this.deps.name }, count) } };
  }

  /**
   * Runs another configuration version (one published since this process started): its fields,
   * key, rights and engine. In-flight batches finish under the old one, the next begin under the
   * new one, so each transaction is protected under one version and says which in its headers.
   * A version that changes what only a restart can (source, sink, format, dead-letter topic,
   * delivery, group) changes nothing here (CONFIG_INVALID, saying a restart runs it). An identity the version no longer
   * authorizes fails as bind() does, and the running version stays.
   */
  async follow(next: { config: PipelineConfig; configVersion: string; engine: Engine; serde: Serde; configFile?: string }): Promise<void> {
    const changed = RESTART_ONLY.filter((k) => JSON.stringify(next.config[k]) !== JSON.stringify(this.deps.config[k]));
    if (changed.length)
      throw new VeilError(
        'CONFIG_INVALID',
        `version ${next.configVersion} changes pipeline ${this.name}'s ${changed.join(', ')}: restart the process to run it`,
      );
    const inline = new RecordProtector({
      name: this.name,
      config: next.config,
      engine: next.engine,
      serde: next.serde,
      ...this.rewrapOf(),
      ...(this.deps.subjects ? { subjects: this.deps.subjects } : {}),
    });
    const previous = this.switching;
    const switching = (async () => {
      await previous;
      // a batch stuck past the recovery's own wait is abandoned by recovery; do not wait on it forever
      await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((r) => setTimeout(r, this.closeWaitMs).unref())]);
      await this.deps.protector?.reload?.({ keys: true, ...(next.configFile ? { configFile: next.configFile } : {}) });
      this.chunks = this.deps.protector ?? inline;
      this.veilHeaders = new CleanHeaders(this.name, next.config, next.configVersion);
      this.ahead.clear();
      this.refusals.clear();
    })();
    this.switching = switching;
    try {
      await switching;
    } finally {
      if (this.switching === switching) this.switching = undefined;
    }
  }

  /** The protection threads re-read the keystore (a key rotated elsewhere); this thread's engine reads it already. */
  async reloadKeys(): Promise<void> {
    await this.deps.protector?.reload?.({ keys: true });
  }

  /** Liveness for /healthz: what a restart fixes (halted, a batch stuck while Kafka answers), not Kafka's absence. */
  health(): LivenessStatus {
    return this.liveness.status();
  }

  /** Readiness for /readyz: its consumer answered by Kafka and its partitions progressing. */
  readiness(): ReadinessStatus {
    return this.liveness.readiness();
  }

  /** The writer's schema versions whose records this pipeline refuses (a mapped path they lack), for /healthz. */
  refusedSchemas(): RefusedSchema[] {
    return this.refusals.list();
  }

  sinkTopic(source: string): string {
    const sink = this.deps.config.sink;
    if ('topic' in sink) return sink.topic;
    this.rename ??= new RegExp(sink.rename.from);
    return source.replace(this.rename, sink.rename.to);
  }

  private async openConsumer(): Promise<void> {
    const c = this.deps.config;
    const consumer = this.deps.kafka.consumer({ groupId: this.groupId, readCommitted: true });
    this.consumer = consumer;
    consumer.on({
      assigned: (assignment) => {
        this.ahead.clear();
        this.transactions.reassigned(assignment);
        this.deps.metrics.keepLagOf(this.deps.name, assignment);
        this.liveness.assigned(Object.entries(assignment).flatMap(([topic, parts]) => parts.map((p) => `${topic}/${p}`)));
      },
      fetched: () => this.liveness.fetched(),
      crashed: (error, restarting) => {
        this.deps.log.error(
          { pipeline: this.deps.name, error: error.name, code: (error as StreamError).code, restarting },
          restarting ? 'consumer crashed; it restarts' : 'consumer crashed',
        );
        if (restarting || this.stopped || this.consumer !== consumer) return;
        this.liveness.consumerDown(error.name);
        if (this.liveness.status().reason?.startsWith('halted')) return;
        void this.recover('consumer crashed');
      },
    });
    await consumer.subscribe('topics' in c.source ? c.source.topics : new RegExp(c.source.pattern));
    await consumer.run(
      (batch, heartbeat) => this.handle(batch, heartbeat),
      (topic, partition, records) => this.ahead.offer(`${topic}/${partition}`, records),
      (at) => this.caughtUp(at),
    );
  }

  /**
   * A partition the consumer caught up on, its position past transaction markers no batch held:
   * the position becomes the group's offset (exactly-once: in a transaction of offsets only), so
   * the group's committed offset — and lag, here and in any tool that reads the group — reaches
   * the high watermark once everything is done. A rejection is tried again by the consumer.
   */
  private async caughtUp(at: { topic: string; partition: number; offset: string; highWatermark: string }): Promise<void> {
    if (this.stopped) return;
    const { name, metrics, config } = this.deps;
    let committed: string | undefined;
    try {
      if (config.delivery === 'exactly-once') committed = await this.transactions.commitEnd(at.topic, at.partition, at.offset);
      else {
        await this.consumer!.commitOffsets(at.topic, at.partition, at.offset);
        committed = at.offset;
      }
    } catch (e) {
      this.deps.log.warn(
        { pipeline: name, topic: at.topic, partition: at.partition, code: (e as StreamError).code ?? (e as Error).name },
        'the caught-up offset was not committed; it is tried again',
      );
      throw e;
    }
    // undefined: reported before a rebalance, the partition perhaps another member's now
    if (committed !== undefined) metrics.setLag(name, at.topic, at.partition, lagOf(at.highWatermark, committed));
  }

  /** Re-creates the consumer and the producers: the new member re-fences every partition it gets. */
  private recover(reason: string): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.recovering ??= (async () => {
      this.deps.log.warn({ pipeline: this.deps.name, reason }, 're-creating the consumer and producers');
      this.deps.metrics.recoveries.inc({ pipeline: this.deps.name });
      const old = this.consumer;
      this.consumer = undefined;
      this.ahead.clear();
      await Promise.race([old?.disconnect().catch(() => undefined), new Promise((r) => setTimeout(r, 10_000).unref())]);
      const closed = await Promise.race([
        this.transactions.closeAll().then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), this.closeWaitMs).unref()),
      ]);
      if (!closed) {
        // a batch is stuck: its producers are dropped under it, and the partitions fenced anew
        this.deps.log.warn({ pipeline: this.deps.name }, 'a batch did not finish: its producers are abandoned');
        this.transactions.abandon();
      }
      if (!this.stopped) await this.openConsumer();
    })()
      .catch((e: unknown) => {
        this.liveness.consumerDown((e as Error).name);
        this.deps.log.error({ pipeline: this.deps.name, error: (e as Error).name }, 'cannot re-create the consumer');
      })
      .finally(() => (this.recovering = undefined));
    return this.recovering;
  }

  /** The raw record to the dead-letter topic, with why: the code, and the path and guard kind it is about (never a value). */
  private deadLetter(record: InRecord, code: string, about: { path?: string; kind?: string } = {}): OutRecord {
    // a producer's own veil.error.* headers never pass for veil's (a path or kind this dead letter does not name)
    const own = record.headers.filter((h) => !h.key.startsWith('veil.error.'));
    return {
      topic: this.deps.config.deadLetterTopic,
      key: record.key,
      value: record.value,
      headers: withHeaders(own, [
        { key: 'veil.error.code', value: utf8(code) },
        ...(about.path === undefined ? [] : [{ key: 'veil.error.path', value: utf8(about.path) }]),
        ...(about.kind === undefined ? [] : [{ key: 'veil.error.kind', value: utf8(about.kind) }]),
        { key: 'veil.pipeline', value: utf8(this.deps.name) },
        { key: 'veil.source.topic', value: utf8(record.topic) },
        { key: 'veil.source.partition', value: utf8(String(record.partition)) },
        { key: 'veil.source.offset', value: utf8(record.offset) },
      ]),
    };
  }

  /** One fetched batch, begun once no configuration change is waiting (follow). */
  private async handle(batch: Batch, heartbeat: () => Promise<void>): Promise<void> {
    while (this.switching) await this.switching.catch(() => undefined);
    const run = this.handleBatch(batch, heartbeat);
    this.inFlight.add(run);
    try {
      await run;
    } finally {
      this.inFlight.delete(run);
    }
  }

  /** One fetched batch of one partition: protected and produced, then its offset committed. */
  private async handleBatch(batch: Batch, heartbeat: () => Promise<void>): Promise<void> {
    const { metrics, name } = this.deps;
    const started = process.hrtime.bigint();
    const partitionKey = `${batch.topic}/${batch.partition}`;
    this.ahead.begin(partitionKey);
    this.liveness.started(partitionKey);
    // past the last record when the consumer skipped transaction markers behind it (ports.ts)
    const next = batch.end ?? (BigInt(batch.records.at(-1)!.offset) + 1n).toString();
    const codes = new Map<string, number>();
    // off: one constant check per batch, and `trace` stays undefined for every record
    const trace = this.tracing.enabled ? this.traceBatch(batch) : undefined;
    let done: InRecord[];
    try {
      if (this.deps.config.delivery === 'exactly-once') {
        done = await this.transactions.run(batch.topic, batch.partition, batch.records, next, (records, tx) =>
          this.produce(records, (r) => tx.send(r), codes, heartbeat, trace),
        );
      } else {
        const producer = await (this.plainProducer ??= this.deps.kafka.producer({}));
        await this.produce(batch.records, (r) => producer.send(r), codes, heartbeat, trace);
        await this.consumer!.commitOffsets(batch.topic, batch.partition, next);
        done = batch.records;
      }
    } catch (e) {
      this.ahead.protected(partitionKey, false);
      this.liveness.failed(partitionKey);
      const code = (e as StreamError).code ?? (e as Error).name;
      trace?.end({ outcome: code, records: 0, deadLettered: 0 });
      if (e instanceof StreamError && !e.retriable) {
        // nothing of the batch was committed; the consumer stops here rather than skip the record
        this.liveness.halted(code);
        this.deps.log.error({ pipeline: name, topic: batch.topic, partition: batch.partition, code }, 'pipeline halted: a dead letter cannot be written');
        void this.consumer?.disconnect().catch(() => undefined);
      } else {
        metrics.retries.inc({ pipeline: name });
        this.deps.log.warn(
          {
            pipeline: name,
            topic: batch.topic,
            partition: batch.partition,
            code,
            cause: (e as Error).cause instanceof Error ? ((e as Error).cause as Error).name : undefined,
          },
          'batch aborted; it is read again',
        );
      }
      throw e;
    }
    // a batch with nothing to produce (all below the committed offset) never reached produce()
    this.ahead.protected(partitionKey);
    this.liveness.progressed(partitionKey);
    const dead = [...codes.values()].reduce((a, b) => a + b, 0);
    trace?.end({ outcome: done.length > 0 ? 'committed' : 'skipped', records: done.length, deadLettered: dead });
    metrics.recordsIn.inc({ pipeline: name }, done.length);
    metrics.recordsOut.inc({ pipeline: name }, done.length - dead);
    for (const [code, n] of codes) metrics.deadLettered.inc({ pipeline: name, code }, n);
    metrics.setLag(name, batch.topic, batch.partition, lagOf(batch.highWatermark, next));
    metrics.batchLatency.observe({ pipeline: name }, Number(process.hrtime.bigint() - started) / 1e9);
  }

  /**
   * Protects records in chunks, each sent while the next is protected (CPU work overlaps the
   * broker round trips; sends stay in order). Counts dead letters by code into `codes` only once
   * everything was sent.
   */
  private async produce(
    records: InRecord[],
    send: (r: OutRecord[]) => Promise<void>,
    codes: Map<string, number>,
    heartbeat: () => Promise<void>,
    trace?: BatchTrace,
  ): Promise<void> {
    const { kafka, config } = this.deps;
    const deadLimit = await kafka.maxMessageBytes(config.deadLetterTopic);
    // each clean topic's limit, read once per batch (a rename sink has one per source topic)
    const limits = new Map<string, number>();
    const limitOf = async (topic: string) => limits.get(topic) ?? limits.set(topic, await kafka.maxMessageBytes(topic)).get(topic)!;
    const tally = new BatchTally();
    let sending: Promise<void> = Promise.resolve();
    let beat = Date.now();
    const partitionKey = `${records[0]!.topic}/${records[0]!.partition}`;
    const ahead = this.ahead.take(partitionKey, records);
    /** the chunks' outcomes, released once nothing sends them any more */
    const used: ChunkOutcome[][] = [];
    try {
      for (let i = 0; i < records.length; i += CHUNK) {
        const slice = records.slice(i, i + CHUNK);
        const outcomes = await (ahead?.[i / CHUNK] ?? this.ahead.protectNow(slice));
        used.push(outcomes);
        if (i + CHUNK >= records.length) this.ahead.protected(partitionKey);
        const chunk: OutRecord[] = [];
        for (let j = 0; j < slice.length; j++) {
          const record = slice[j]!;
          const outcome = outcomes[j]!;
          let out = 'code' in outcome ? this.deadLetter(record, outcome.code, outcome) : this.cleanRecord(record, outcome.key, outcome.value, outcome.fields);
          tally.outcome(outcome);
          if (out.topic !== config.deadLetterTopic && !fitsAlone(out, limits.get(out.topic) ?? (await limitOf(out.topic))))
            out = this.deadLetter(record, 'RECORD_TOO_LARGE');
          if (out.topic === config.deadLetterTopic) {
            if (!fitsAlone(out, deadLimit))
              throw new StreamError(
                'DEAD_LETTER_FAILED',
                `record ${record.topic}/${record.partition}@${record.offset}: its dead letter is larger than ${config.deadLetterTopic} accepts`,
              );
            tally.deadLetter(out.headers.find((h) => h.key === 'veil.error.code')!.value!.toString());
          }
          chunk.push(
            trace === undefined
              ? out
              : trace.record(record, out, out.topic === config.deadLetterTopic ? headerValue(out.headers, 'veil.error.code')?.toString() : undefined),
          );
        }
        sending = sending.then(() => send(chunk));
        if (Date.now() - beat > 1000) {
          await heartbeat();
          beat = Date.now();
        }
      }
      await sending;
    } catch (e) {
      await sending.catch(() => undefined);
      throw e;
    } finally {
      // every send has settled: the clients copied the records' bytes (or the batch failed)
      for (const outcomes of used) this.chunks.release?.(outcomes);
    }
    this.report(tally, codes);
  }

  /** a batch sent: its dead letters by code into `codes`, the guard's findings and the refused schemas into the metrics and the log */
  private report(tally: BatchTally, codes: Map<string, number>): void {
    for (const [code, n] of tally.deadLetters) codes.set(code, n);
    for (const [path, kind, n] of tally.findings.entries()) {
      this.deps.metrics.countUnmapped(this.deps.name, path, kind, n);
      this.warnUnmapped(path, kind, false);
    }
    for (const [path, kind, n] of tally.reported.entries()) {
      this.deps.metrics.countUnmapped(this.deps.name, path, kind, n, true);
      this.warnUnmapped(path, kind, true);
    }
    for (const [schema, path, n] of tally.refused.entries()) this.refusals.count(schema === '' ? undefined : Number(schema), path === '' ? undefined : path, n);
  }

  /** The spans of one batch's transaction, under the configuration version its records are protected with. */
  private traceBatch(batch: Batch): BatchTrace {
    return new BatchTrace(this.tracing, {
      pipeline: this.name,
      topic: batch.topic,
      partition: batch.partition,
      group: this.groupId,
      configVersion: this.veilHeaders.configVersion,
      delivery: this.deps.config.delivery,
      fetched: batch.records.length,
      rewrap: this.deps.rewrap !== undefined,
    });
  }

  /** The unmapped guard's first finding at a path, logged once per path and kind (a path holds names, never values). */
  private warnUnmapped(path: string, kind: string, reported: boolean): void {
    const finding = `${path}\u0000${kind}`;
    if (this.warned.has(finding) || this.warned.size >= 1000) return;
    this.warned.add(finding);
    if (reported)
      this.deps.log.warn(
        { pipeline: this.deps.name, path, kind, code: 'UNMAPPED_PERSONAL_DATA', mode: 'report' },
        'personal data at a path the mapping does not name: report mode passes its records in clear (map the path, or allow it, before enforcing)',
      );
    else
      this.deps.log.warn(
        { pipeline: this.deps.name, path, kind, code: 'UNMAPPED_PERSONAL_DATA' },
        'personal data at a path the mapping does not name: its records are dead-lettered (map the path, or allow it)',
      );
  }

  private cleanRecord(record: InRecord, key: Buffer | null, value: Buffer, fields: string | undefined): OutRecord {
    const veil = this.veilHeaders.of(fields);
    const headers = record.headers.length === 0 ? veil : withHeaders(record.headers, veil);
    return { topic: this.sinkTopic(record.topic), key, value, headers };
  }
}
