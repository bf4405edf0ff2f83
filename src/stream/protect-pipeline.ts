import type { Engine } from '../engine/engine.ts';
import type { PipelineConfig } from '../engine/config/schema.ts';
import { ValueError, VeilError } from '../engine/errors.ts';
import { mappings, protectRecord, type Mapping } from './protect-record.ts';
import type { Batch, ConsumerPort, InRecord, KafkaPort, OutRecord, ProducerPort } from './ports.ts';
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
    return source.replace(new RegExp(sink.rename.from), sink.rename.to);
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

  private async handle(batch: Batch, heartbeat: () => Promise<void>): Promise<void> {
    const { metrics, name } = { metrics: this.deps.metrics, name: this.deps.name };
    const started = process.hrtime.bigint();
    const out: OutRecord[] = [];
    const codes = new Map<string, number>();
    let beat = Date.now();
    for (const record of batch.records) {
      try {
        out.push(await this.protect(record));
      } catch (e) {
        if (e instanceof StreamError && !e.retriable) {
          out.push(this.deadLetter(record, e.code));
          codes.set(e.code, (codes.get(e.code) ?? 0) + 1);
        } else {
          metrics.retries.inc({ pipeline: name });
          this.deps.log.warn({ pipeline: name, topic: batch.topic, partition: batch.partition, code: (e as StreamError).code ?? (e as Error).name }, 'retriable failure: the batch will be read again');
          throw e;
        }
      }
      if (Date.now() - beat > 1000) {
        await heartbeat();
        beat = Date.now();
      }
    }
    const next = (BigInt(batch.records.at(-1)!.offset) + 1n).toString();
    if (this.deps.config.delivery === 'exactly-once') await this.commitTransaction(batch, out, next);
    else {
      this.plainProducer ??= this.deps.kafka.producer({});
      await (await this.plainProducer).send(out);
      await this.consumer!.commitOffsets(batch.topic, batch.partition, next);
    }
    metrics.recordsIn.inc({ pipeline: name }, batch.records.length);
    metrics.recordsOut.inc({ pipeline: name }, batch.records.length - [...codes.values()].reduce((a, b) => a + b, 0));
    for (const [code, n] of codes) metrics.deadLettered.inc({ pipeline: name, code }, n);
    metrics.lag.set({ pipeline: name, topic: batch.topic, partition: String(batch.partition) }, Number(BigInt(batch.highWatermark) - BigInt(next)));
    metrics.batchLatency.observe({ pipeline: name }, Number(process.hrtime.bigint() - started) / 1e9);
  }

  private async commitTransaction(batch: Batch, out: OutRecord[], next: string): Promise<void> {
    const id = `${this.groupId}.${batch.topic}.${batch.partition}`;
    let producer = this.producers.get(id);
    if (!producer) {
      producer = this.deps.kafka.producer({ transactionalId: id });
      this.producers.set(id, producer);
      producer.catch(() => this.producers.delete(id));
    }
    const p = await producer;
    const tx = await p.transaction();
    try {
      await tx.send(out);
      await tx.sendOffsets(this.groupId, batch.topic, batch.partition, next);
      await tx.commit();
    } catch (e) {
      // after an indefinite error (a timeout) the transaction's fate is unknown: abort, and
      // never reuse this producer (KAFKA-18579); the batch is read again
      await tx.abort().catch(() => undefined);
      this.producers.delete(id);
      await p.disconnect().catch(() => undefined);
      throw e;
    }
  }
}
