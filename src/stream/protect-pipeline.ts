import type { Engine } from '../engine/engine.ts';
import type { PipelineConfig } from '../engine/config/schema.ts';
import { ValueError, VeilError } from '../engine/errors.ts';
import { mappings, protectRecord, type Mapping } from './protect-record.ts';
import type { Batch, ConsumerPort, InRecord, KafkaPort, OutRecord, ProducerPort, Transaction } from './ports.ts';
import type { Serde } from './serde/serde.ts';
import { StreamError } from './stream-error.ts';
import type { StreamMetrics } from './stream-metrics.ts';

export interface PipelineLog {
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
}

export interface PipelineDeps {
  name: string;
  config: PipelineConfig;
  configVersion: string;
  engine: Engine;
  kafka: KafkaPort;
  serde: Serde;
  metrics: StreamMetrics;
  log: PipelineLog;
}

const utf8 = (s: string) => Buffer.from(s, 'utf8');

/** records protected between two sends */
const CHUNK = 1000;

/**
 * Consume → protect → produce for one pipeline. Exactly-once (default): per input partition a
 * transactional producer (id `<group>.<topic>.<partition>`, fencing zombies) sends the clean and
 * dead-letter records and commits the consumed offsets in one transaction; clean topics are read
 * with read_committed. At-least-once: idempotent sends, then an offset commit. A record that
 * cannot be protected goes to the dead-letter topic, never to the clean one; a retriable failure
 * (registry, broker) aborts the batch, which is read again — nothing is skipped.
 */
export class ProtectPipeline {
  readonly groupId: string;
  private readonly deps: PipelineDeps;
  private readonly maps: Mapping[];
  private readonly keyTransform?: (v: string) => string;
  private readonly producers = new Map<string, Promise<ProducerPort>>();
  private plainProducer?: Promise<ProducerPort>;
  private consumer?: ConsumerPort;
  private readonly protectedHeader: Buffer;
  private rename?: RegExp;

  constructor(deps: PipelineDeps) {
    this.deps = deps;
    const c = deps.config;
    this.groupId = c.groupId ?? `veil-protect-${deps.name}`;
    const fields = [...c.fields.map((f) => f.field), ...(c.key ? [c.key.field] : [])].map((f) => {
      const [className, propertyName] = f.split('.') as [string, string];
      return { className, propertyName };
    });
    // authorization happens once, here: a pipeline whose identity may not protect its fields does not start
    const bound = deps.engine.bindFields({
      identity: { subject: `pipeline:${deps.name}`, roles: c.roles },
      rightsEvidences: Object.entries(c.rightsEvidences).map(([name, value]) => ({ name, value })),
      processingEvidences: Object.entries(c.processingEvidences).map(([name, value]) => ({ name, value })),
      fields,
    });
    if (bound.reveals) throw new VeilError('CONFIG_INVALID', `pipeline ${deps.name} would unprotect: protect pipelines only protect`);
    this.maps = mappings(c.fields.map((f) => f.path), bound.transforms);
    if (c.key) this.keyTransform = bound.transforms[c.fields.length];
    this.protectedHeader = utf8([...c.fields.map((f) => f.path), ...(c.key ? ['(key)'] : [])].join(','));
  }

  async start(): Promise<void> {
    const c = this.deps.config;
    this.consumer = this.deps.kafka.consumer({ groupId: this.groupId, readCommitted: true });
    this.consumer.onCrash((e) => this.deps.log.error({ pipeline: this.deps.name, error: e.name }, 'consumer crashed; kafkajs restarts it'));
    // a partition that moved to another member may come back later: its producer here was
    // fenced meanwhile, so producers of partitions no longer owned are closed at once
    this.consumer.onAssignment((assignment) => {
      const owned = new Set(Object.entries(assignment).flatMap(([topic, parts]) => parts.map((p) => `${this.groupId}.${topic}.${p}`)));
      for (const [id, producer] of this.producers) {
        if (owned.has(id)) continue;
        this.producers.delete(id);
        producer.then((p) => p.disconnect()).catch(() => undefined);
      }
    });
    await this.consumer.subscribe('topics' in c.source ? c.source.topics : new RegExp(c.source.pattern));
    await this.consumer.run((batch, heartbeat) => this.handle(batch, heartbeat));
  }

  /** Stops consuming (the batch in flight finishes or aborts), then closes the producers. */
  async stop(): Promise<void> {
    await this.consumer?.disconnect();
    const producers = [...this.producers.values(), ...(this.plainProducer ? [this.plainProducer] : [])];
    this.producers.clear();
    await Promise.all(producers.map(async (p) => (await p).disconnect().catch(() => undefined)));
  }

  sinkTopic(source: string): string {
    const sink = this.deps.config.sink;
    if ('topic' in sink) return sink.topic;
    this.rename ??= new RegExp(sink.rename.from);
    return source.replace(this.rename, sink.rename.to);
  }

  /** Protects one record, or says why it goes to the dead-letter topic. */
  async protect(record: InRecord): Promise<OutRecord> {
    const c = this.deps.config;
    if (record.value === null) throw new StreamError('RECORD_MALFORMED', 'the record has no value');
    const decoded = await this.deps.serde.decode(record.value);
    protectRecord(decoded.value, this.maps, c.missing);
    let key = record.key;
    if (this.keyTransform) {
      if (key === null) throw new StreamError('KEY_MISSING', 'the record has no key');
      try {
        key = utf8(this.keyTransform(key.toString('utf8')));
      } catch (e) {
        if (e instanceof ValueError) throw new StreamError(e.code, `record key: value ${e.message}`);
        throw e;
      }
    }
    const topic = this.sinkTopic(record.topic);
    return {
      topic,
      key,
      value: await this.deps.serde.encode(decoded, topic),
      headers: { ...record.headers, 'veil.pipeline': utf8(this.deps.name), 'veil.config.version': utf8(this.deps.configVersion), 'veil.protected.fields': this.protectedHeader },
    };
  }

  private deadLetter(record: InRecord, code: string): OutRecord {
    return {
      topic: this.deps.config.deadLetterTopic,
      key: record.key,
      value: record.value,
      headers: {
        ...record.headers,
        'veil.error.code': utf8(code),
        'veil.pipeline': utf8(this.deps.name),
        'veil.source.topic': utf8(record.topic),
        'veil.source.partition': utf8(String(record.partition)),
        'veil.source.offset': utf8(record.offset),
      },
    };
  }

  /**
   * One fetched batch of one partition. Records are protected in chunks, and each chunk is sent
   * while the next is being protected, so CPU work overlaps the broker round trips; sends stay
   * in order. Exactly-once: all of it, dead letters and the offset commit in one transaction.
   */
  private async handle(batch: Batch, heartbeat: () => Promise<void>): Promise<void> {
    const { metrics, name } = this.deps;
    const started = process.hrtime.bigint();
    const next = (BigInt(batch.records.at(-1)!.offset) + 1n).toString();
    const exactlyOnce = this.deps.config.delivery === 'exactly-once';
    const target = exactlyOnce ? await this.begin(batch) : undefined;
    const send = target ? (r: OutRecord[]) => target.tx.send(r) : async (r: OutRecord[]) => (await (this.plainProducer ??= this.deps.kafka.producer({}))).send(r);
    const codes = new Map<string, number>();
    let sending: Promise<void> = Promise.resolve();
    let sent = false;
    let beat = Date.now();
    try {
      for (let i = 0; i < batch.records.length; i += CHUNK) {
        const chunk: OutRecord[] = [];
        for (const record of batch.records.slice(i, i + CHUNK)) chunk.push(await this.protectOrDeadLetter(record, batch, codes));
        sent = true;
        sending = sending.then(() => send(chunk));
        if (Date.now() - beat > 1000) {
          await heartbeat();
          beat = Date.now();
        }
      }
      await sending;
      if (target) await this.commit(target, batch, next);
      else await this.consumer!.commitOffsets(batch.topic, batch.partition, next);
    } catch (e) {
      await sending.catch(() => undefined);
      if (!target) throw e;
      await this.discard(target);
      // A failure before anything was sent (a retriable protect error) may be retried on the
      // batch in memory. Once sends began, the transaction's outcome may be unknown (a commit
      // that timed out can still have committed): the consumer must restart from the offsets
      // the broker has committed, or it could write the batch twice. A non-retriable error makes
      // kafkajs restart the consumer (restartOnFailure) instead of retrying the batch in memory.
      if (!sent) throw e;
      throw Object.assign(new Error('transaction outcome unknown; restarting from the committed offsets', { cause: e }), { name: 'VeilTransactionAborted', retriable: false });
    }
    const dead = [...codes.values()].reduce((a, b) => a + b, 0);
    metrics.recordsIn.inc({ pipeline: name }, batch.records.length);
    metrics.recordsOut.inc({ pipeline: name }, batch.records.length - dead);
    for (const [code, n] of codes) metrics.deadLettered.inc({ pipeline: name, code }, n);
    metrics.lag.set({ pipeline: name, topic: batch.topic, partition: String(batch.partition) }, Number(BigInt(batch.highWatermark) - BigInt(next)));
    metrics.batchLatency.observe({ pipeline: name }, Number(process.hrtime.bigint() - started) / 1e9);
  }

  private async protectOrDeadLetter(record: InRecord, batch: Batch, codes: Map<string, number>): Promise<OutRecord> {
    try {
      return await this.protect(record);
    } catch (e) {
      if (e instanceof StreamError && !e.retriable) {
        codes.set(e.code, (codes.get(e.code) ?? 0) + 1);
        return this.deadLetter(record, e.code);
      }
      this.deps.metrics.retries.inc({ pipeline: this.deps.name });
      this.deps.log.warn({ pipeline: this.deps.name, topic: batch.topic, partition: batch.partition, code: (e as StreamError).code ?? (e as Error).name }, 'retriable failure: the batch will be read again');
      throw e;
    }
  }

  private async begin(batch: Batch): Promise<{ id: string; producer: ProducerPort; tx: Transaction }> {
    const id = `${this.groupId}.${batch.topic}.${batch.partition}`;
    let producer = this.producers.get(id);
    if (!producer) {
      producer = this.deps.kafka.producer({ transactionalId: id });
      this.producers.set(id, producer);
      producer.catch(() => this.producers.delete(id));
    }
    const p = await producer;
    return { id, producer: p, tx: await p.transaction() };
  }

  private async commit(target: { tx: Transaction }, batch: Batch, next: string): Promise<void> {
    await target.tx.sendOffsets(this.groupId, batch.topic, batch.partition, next);
    await target.tx.commit();
  }

  /**
   * After any failure inside a transaction its fate may be unknown (a timeout): abort, and never
   * reuse the producer (KAFKA-18579); the batch is read again from the committed offset.
   */
  private async discard(target: { id: string; producer: ProducerPort; tx: Transaction }): Promise<void> {
    await target.tx.abort().catch(() => undefined);
    this.producers.delete(target.id);
    await target.producer.disconnect().catch(() => undefined);
  }
}
