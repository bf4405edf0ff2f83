import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { compileOrFail, EXAMPLE_CONFIG_TEXT, keysFor } from '../helpers/engine-fixture.ts';
import { Engine } from '../../src/engine/engine.ts';
import { ProtectPipeline } from '../../src/stream/protect-pipeline.ts';
import { jsonSerde } from '../../src/stream/serde/json-serde.ts';
import { StreamError } from '../../src/stream/stream-error.ts';
import { StreamMetrics } from '../../src/stream/stream-metrics.ts';
import type { Batch, ConsumerPort, KafkaPort, OutRecord, ProducerPort } from '../../src/stream/ports.ts';
import type { Serde } from '../../src/stream/serde/serde.ts';

// An in-memory KafkaPort: pure pipeline logic (transaction boundaries, dead letters, retries);
// the same behaviour against a real broker is in test/integration/stream-*.test.ts.
class FakeKafka implements KafkaPort {
  handler?: (batch: Batch, heartbeat: () => Promise<void>) => Promise<void>;
  assigned?: (assignment: Record<string, number[]>) => void;
  committed: OutRecord[] = [];
  offsets: string[] = [];
  aborted = 0;
  producersCreated = 0;
  failNextCommit = false;
  consumer(): ConsumerPort {
    return {
      subscribe: async () => undefined,
      run: async (h) => void (this.handler = h),
      commitOffsets: async (_t, _p, offset) => void this.offsets.push(offset),
      disconnect: async () => undefined,
      onCrash: () => undefined,
      onAssignment: (l) => void (this.assigned = l),
    };
  }
  async producer(): Promise<ProducerPort> {
    this.producersCreated++;
    return {
      transaction: async () => {
        const pending: OutRecord[] = [];
        let offset = '';
        return {
          send: async (r) => void pending.push(...r),
          sendOffsets: async (_g, _t, _p, o) => void (offset = o),
          commit: async () => {
            if (this.failNextCommit) {
              this.failNextCommit = false;
              throw new Error('request timed out');
            }
            this.committed.push(...pending);
            this.offsets.push(offset);
          },
          abort: async () => void this.aborted++,
        };
      },
      send: async (r) => void this.committed.push(...r),
      disconnect: async () => undefined,
    };
  }
  disconnect = async () => undefined;
}

const config = compileOrFail(`${EXAMPLE_CONFIG_TEXT}
pipelines:
  p:
    source: { topics: [raw] }
    sink: { topic: clean }
    deadLetterTopic: dlq
    format: json
    fields: [ { path: email, field: Customer.email } ]
    missing: dead-letter
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
`);

function pipeline(kafka: FakeKafka, serde: Serde = jsonSerde(), delivery: 'exactly-once' | 'at-least-once' = 'exactly-once') {
  return new ProtectPipeline({
    name: 'p', config: { ...config.pipelines.p!, delivery }, configVersion: config.version, engine: new Engine({ config, keys: keysFor(config) }),
    kafka, serde, metrics: new StreamMetrics(), log: pino({ level: 'silent' }),
  });
}

const rec = (offset: number, value: string | null) => ({ topic: 'raw', partition: 0, offset: String(offset), key: null, value: value === null ? null : Buffer.from(value), headers: {}, timestamp: '0' });
const batch = (records: ReturnType<typeof rec>[]): Batch => ({ topic: 'raw', partition: 0, records, highWatermark: String(Number(records.at(-1)!.offset) + 1) });

describe('ProtectPipeline (in-memory Kafka port)', () => {
  it('commits clean and dead-letter records and the next offset in one transaction', async () => {
    const kafka = new FakeKafka();
    await pipeline(kafka).start();
    await kafka.handler!(batch([rec(10, '{"email":"a@b.c"}'), rec(11, '{"other":1}'), rec(12, '{oops')]), async () => undefined);
    expect(kafka.committed.map((r) => r.topic)).toEqual(['clean', 'dlq', 'dlq']);
    expect(kafka.committed.slice(1).map((r) => r.headers['veil.error.code']!.toString())).toEqual(['FIELD_MISSING', 'RECORD_MALFORMED']);
    expect(kafka.offsets).toEqual(['13']);
    expect(JSON.parse(kafka.committed[0]!.value!.toString()).email).not.toBe('a@b.c');
  });

  it('a retriable failure aborts the batch: nothing sent, no offset, the batch is read again', async () => {
    const kafka = new FakeKafka();
    let calls = 0;
    const flaky: Serde = {
      decode: async (b) => {
        if (calls++ === 0) throw new StreamError('REGISTRY_UNAVAILABLE', 'registry down');
        return jsonSerde().decode(b);
      },
      encode: (d, t) => jsonSerde().encode(d, t),
    };
    await pipeline(kafka, flaky).start();
    const b = batch([rec(0, '{"email":"a@b.c"}')]);
    await expect(kafka.handler!(b, async () => undefined)).rejects.toThrow(StreamError);
    expect(kafka.committed).toEqual([]);
    expect(kafka.offsets).toEqual([]);
    await kafka.handler!(b, async () => undefined);
    expect(kafka.committed.map((r) => r.topic)).toEqual(['clean']);
    expect(kafka.offsets).toEqual(['1']);
  });

  it('after a failed commit it aborts and never reuses that producer', async () => {
    const kafka = new FakeKafka();
    await pipeline(kafka).start();
    kafka.failNextCommit = true;
    const b = batch([rec(0, '{"email":"a@b.c"}')]);
    // the outcome of a failed commit is unknown: a non-retriable error makes kafkajs restart the
    // consumer from the committed offsets rather than retry the batch in memory
    const error = await kafka.handler!(b, async () => undefined).then(() => undefined, (e: Error & { retriable?: boolean; cause?: Error }) => e);
    expect(error?.retriable).toBe(false);
    expect(error?.cause?.message).toBe('request timed out');
    expect(kafka.aborted).toBe(1);
    await kafka.handler!(b, async () => undefined);
    expect(kafka.producersCreated).toBe(2);
    expect(kafka.committed).toHaveLength(1);
  });

  it('closes the producer of a partition it no longer owns, so a returning partition gets a fresh (unfenced) one', async () => {
    const kafka = new FakeKafka();
    await pipeline(kafka).start();
    const b = batch([rec(0, '{"email":"a@b.c"}')]);
    await kafka.handler!(b, async () => undefined);
    kafka.assigned!({ raw: [0] });
    await kafka.handler!(b, async () => undefined);
    expect(kafka.producersCreated).toBe(1);
    kafka.assigned!({ raw: [1] });
    kafka.assigned!({ raw: [0, 1] });
    await kafka.handler!(b, async () => undefined);
    expect(kafka.producersCreated).toBe(2);
  });

  it('at-least-once: sends, then commits the offset outside a transaction', async () => {
    const kafka = new FakeKafka();
    await pipeline(kafka, jsonSerde(), 'at-least-once').start();
    await kafka.handler!(batch([rec(5, '{"email":"a@b.c"}')]), async () => undefined);
    expect(kafka.committed.map((r) => r.topic)).toEqual(['clean']);
    expect(kafka.offsets).toEqual(['6']);
  });

  it('refuses to start a pipeline whose identity may not protect its fields', () => {
    const kafka = new FakeKafka();
    expect(() => new ProtectPipeline({
      name: 'p', config: { ...config.pipelines.p!, fields: [{ path: 'name', field: 'Customer.name' }], roles: ['support'], rightsEvidences: { Role: 'support' } }, configVersion: 'x',
      engine: new Engine({ config, keys: keysFor(config) }), kafka, serde: jsonSerde(), metrics: new StreamMetrics(), log: pino({ level: 'silent' }),
    })).toThrow(/not granted/);
  });
});
