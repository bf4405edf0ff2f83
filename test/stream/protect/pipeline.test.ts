import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { EXAMPLE_CONFIG_TEXT, keysFor, veilConfigOrFail } from '../../helpers/engine-fixture.ts';
import { emailPipelineConfig, emailProtectPipeline } from '../email-pipeline.ts';
import { Engine } from '../../../src/engine/index.ts';
import { ProtectPipeline } from '../../../src/stream/protect/pipeline.ts';
import { jsonSerde } from '../../../src/stream/serde/json/json-serde.ts';
import { StreamError } from '../../../src/stream/stream-error.ts';
import { StreamMetrics } from '../../../src/stream/protect/stream-metrics.ts';
import { headerValue, type Batch, type Header, type InRecord } from '../../../src/kafka/index.ts';
import type { Serde } from '../../../src/stream/serde/serde.ts';
import { RecordProtector, type ChunkItem, type ChunkOutcome, type ChunkProtector } from '../../../src/stream/protect/record-protector.ts';
import { FakeKafka } from '../fake-kafka.ts';
import { pipelineEntry } from '../../helpers/pipeline-yaml.ts';

const config = emailPipelineConfig(['missing: dead-letter']);

function pipeline(kafka: FakeKafka, serde: Serde = jsonSerde(), delivery: 'exactly-once' | 'at-least-once' = 'exactly-once', protector?: ChunkProtector) {
  return emailProtectPipeline(config, kafka, { config: { ...config.pipelines.p!, delivery }, serde, ...(protector ? { protector } : {}) });
}

/** protects in this thread, counting the records it was asked for; `failing` rejects the next calls */
function countingProtector() {
  const inline = new RecordProtector({
    name: 'p',
    config: config.pipelines.p!,
    engine: new Engine({ config: config.engine, keys: keysFor(config.engine) }),
    serde: jsonSerde(),
  });
  const c = {
    records: 0,
    failing: 0,
    protectChunk: async (items: readonly ChunkItem[]): Promise<ChunkOutcome[]> => {
      c.records += items.length;
      if (c.failing > 0) {
        c.failing--;
        throw new StreamError('TRANSACTION_ABORTED', 'protection worker exited (1)');
      }
      return inline.protectChunk(items);
    },
    close: async () => undefined,
  };
  return c;
}

const rec = (offset: number, value: string | null, headers: Header[] = []): InRecord => ({
  topic: 'raw',
  partition: 0,
  offset: String(offset),
  key: null,
  value: value === null ? null : Buffer.from(value),
  headers,
  timestamp: '0',
});
const batch = (records: InRecord[]): Batch => ({ topic: 'raw', partition: 0, records, highWatermark: String(Number(records.at(-1)!.offset) + 1) });
const beat = async () => undefined;
const code = (e: unknown) => (e as StreamError).code;
const ids = (kafka: FakeKafka) => kafka.committed.map((r) => JSON.parse(r.value!.toString()).id);

async function started(kafka: FakeKafka, serde?: Serde) {
  const p = pipeline(kafka, serde);
  await p.start();
  kafka.events.assigned!({ raw: [0] });
  return p;
}

describe('ProtectPipeline (in-memory Kafka port)', () => {
  it('commits clean and dead-letter records and the next offset in one transaction', async () => {
    const kafka = new FakeKafka();
    await started(kafka);
    await kafka.handler!(batch([rec(10, '{"email":"a@b.c"}'), rec(11, '{"other":1}'), rec(12, '{oops')]), beat);
    expect(kafka.committed.map((r) => r.topic)).toEqual(['clean', 'dlq', 'dlq']);
    expect(kafka.committed.slice(1).map((r) => headerValue(r.headers, 'veil.error.code')!.toString())).toEqual(['FIELD_MISSING', 'RECORD_MALFORMED']);
    expect(kafka.offsets.get('raw/0')).toBe('13');
    expect(JSON.parse(kafka.committed[0]!.value!.toString()).email).not.toBe('a@b.c');
  });

  it("a dead letter carries veil's veil.error.* headers only: a producer's own never pass for them", async () => {
    const kafka = new FakeKafka();
    await started(kafka);
    const forged = [
      { key: 'veil.error.path', value: Buffer.from('forged') },
      { key: 'veil.error.kind', value: Buffer.from('email') },
      { key: 'app', value: Buffer.from('1') },
    ];
    await kafka.handler!(batch([rec(20, '{oops', forged)]), beat);
    const headers = kafka.committed[0]!.headers;
    expect([
      headerValue(headers, 'veil.error.code')!.toString(),
      headerValue(headers, 'veil.error.path'),
      headerValue(headers, 'veil.error.kind'),
      headerValue(headers, 'app')!.toString(),
    ]).toEqual(['RECORD_MALFORMED', undefined, undefined, '1']);
  });

  it('fences before it reads the offset: records an earlier owner committed are not written again', async () => {
    const kafka = new FakeKafka();
    kafka.offsets.set('raw/0', '2'); // committed by the previous owner, after this consumer fetched from 0
    await started(kafka);
    await kafka.handler!(batch([0, 1, 2, 3].map((i) => rec(i, `{"id":${i},"email":"a@b.c"}`))), beat);
    expect(ids(kafka)).toEqual([2, 3]);
    expect(kafka.offsets.get('raw/0')).toBe('4');
  });

  it('a batch wholly below the committed offset produces nothing and opens no transaction', async () => {
    const kafka = new FakeKafka();
    kafka.offsets.set('raw/0', '9');
    await started(kafka);
    await kafka.handler!(batch([rec(3, '{"id":3,"email":"a@b.c"}')]), beat);
    expect(kafka.committed).toEqual([]);
    expect(kafka.offsets.get('raw/0')).toBe('9');
  });

  it('a retriable failure aborts the transaction, discards the producer and retries retriably', async () => {
    const kafka = new FakeKafka();
    let calls = 0;
    const flaky: Serde = {
      protect: async (b, p, t) => {
        if (calls++ === 0) throw new StreamError('REGISTRY_UNAVAILABLE', 'registry down');
        return jsonSerde().protect(b, p, t);
      },
    };
    await started(kafka, flaky);
    const b = batch([rec(0, '{"id":0,"email":"a@b.c"}')]);
    const error = await kafka.handler!(b, beat).catch((e: unknown) => e);
    expect(code(error)).toBe('TRANSACTION_ABORTED');
    expect((error as StreamError).retriable).toBe(true);
    expect(code((error as Error).cause)).toBe('REGISTRY_UNAVAILABLE');
    expect(kafka.aborted).toBe(1);
    expect(kafka.committed).toEqual([]);
    await kafka.handler!(b, beat);
    expect(kafka.producersCreated).toBe(2);
    expect(ids(kafka)).toEqual([0]);
  });

  it.each([true, false])('a commit with an unknown outcome (it did land: %s) is retried exactly: re-fence, re-read, skip what landed', async (landed) => {
    const kafka = new FakeKafka();
    await started(kafka);
    kafka.failNextCommit = { landed };
    const b = batch([rec(0, '{"id":0,"email":"a@b.c"}'), rec(1, '{"id":1,"email":"a@b.c"}')]);
    expect(code(await kafka.handler!(b, beat).catch((e: unknown) => e))).toBe('TRANSACTION_ABORTED');
    expect(kafka.aborted).toBe(1);
    // kafkajs retries the same batch from memory: whatever the outcome was, it is written once
    await kafka.handler!(b, beat);
    expect(ids(kafka)).toEqual([0, 1]);
    expect(kafka.producersCreated).toBe(2);
    expect(kafka.offsets.get('raw/0')).toBe('2');
  });

  it('every group (re)join fences every partition again, also the ones it kept', async () => {
    const kafka = new FakeKafka();
    await started(kafka);
    const b = (i: number) => batch([rec(i, `{"id":${i},"email":"a@b.c"}`)]);
    await kafka.handler!(b(0), beat);
    await kafka.handler!(b(1), beat);
    expect(kafka.producersCreated).toBe(1);
    kafka.events.assigned!({ raw: [0] });
    await kafka.handler!(b(2), beat);
    expect(kafka.producersCreated).toBe(2);
    // a stale batch delivered after the re-fence is skipped by the fresh offset
    await kafka.handler!(b(1), beat);
    expect(ids(kafka)).toEqual([0, 1, 2]);
  });

  it('a fenced producer (another member took the partition) commits nothing', async () => {
    const kafka = new FakeKafka();
    await started(kafka);
    await kafka.handler!(batch([rec(0, '{"id":0,"email":"a@b.c"}')]), beat);
    await kafka.producer({ transactionalId: 'veil-protect-p.raw.0' }); // the new owner fences us
    expect(code(await kafka.handler!(batch([rec(1, '{"id":1,"email":"a@b.c"}')]), beat).catch((e: unknown) => e))).toBe('TRANSACTION_ABORTED');
    expect(ids(kafka)).toEqual([0]);
  });

  it('a record whose protected form is larger than the clean topic accepts is dead-lettered as RECORD_TOO_LARGE; the partition moves on', async () => {
    const kafka = new FakeKafka();
    kafka.limits.set('clean', 400);
    await started(kafka);
    const big = `{"id":1,"email":"a@b.c","pad":"${'x'.repeat(300)}"}`;
    await kafka.handler!(batch([rec(0, '{"id":0,"email":"a@b.c"}'), rec(1, big), rec(2, '{"id":2,"email":"a@b.c"}')]), beat);
    expect(kafka.committed.map((r) => r.topic)).toEqual(['clean', 'dlq', 'clean']);
    expect(headerValue(kafka.committed[1]!.headers, 'veil.error.code')!.toString()).toBe('RECORD_TOO_LARGE');
    expect(kafka.committed[1]!.value!.toString()).toBe(big);
    expect(kafka.offsets.get('raw/0')).toBe('3');
  });

  it('a schema version refused for lacking a mapped path: its records dead-lettered with the path, the schema listed for /healthz, the pipeline healthy', async () => {
    const kafka = new FakeKafka();
    const refusing: Serde = {
      protect: async (bytes) => {
        if (bytes.toString().includes('v2'))
          throw new StreamError('SCHEMA_PATH_UNKNOWN', 'schema 12 has no field at the mapped path email', { path: 'email', schema: 12 });
        return bytes;
      },
    };
    const p = await started(kafka, refusing);
    await kafka.handler!(batch([rec(0, '{"v2":1}'), rec(1, '{"v1":1}'), rec(2, '{"v2":2}')]), beat);
    expect(kafka.committed.map((r) => r.topic)).toEqual(['dlq', 'clean', 'dlq']);
    expect(['veil.error.code', 'veil.error.path'].map((h) => headerValue(kafka.committed[0]!.headers, h)!.toString())).toEqual([
      'SCHEMA_PATH_UNKNOWN',
      'email',
    ]);
    expect(p.refusedSchemas()).toEqual([{ schemaId: 12, path: 'email' }]);
    expect(p.health()).toEqual({ healthy: true });
  });

  it('a dead letter the dead-letter topic cannot take halts the pipeline: nothing committed, health fails', async () => {
    const kafka = new FakeKafka();
    kafka.limits.set('clean', 200);
    kafka.limits.set('dlq', 200);
    const p = await started(kafka);
    const error = await kafka.handler!(batch([rec(0, '{"id":0,"email":"a@b.c"}'), rec(1, `{"email":"a@b.c","pad":"${'x'.repeat(300)}"}`)]), beat).catch(
      (e: unknown) => e,
    );
    expect(code(error)).toBe('DEAD_LETTER_FAILED');
    expect((error as StreamError).retriable).toBe(false);
    expect(kafka.committed).toEqual([]);
    expect(kafka.offsets.get('raw/0')).toBeUndefined();
    expect(p.health()).toEqual({ healthy: false, reason: 'halted: DEAD_LETTER_FAILED' });
  });

  it('keeps every header: repeated keys in order, empty, binary and null values; veil sets its own names', async () => {
    const kafka = new FakeKafka();
    await started(kafka);
    const headers: Header[] = [
      { key: 'trace', value: Buffer.from('1') },
      { key: 'trace', value: Buffer.from('2') },
      { key: 'empty', value: Buffer.alloc(0) },
      { key: 'bin', value: Buffer.from([0, 255, 128]) },
      { key: 'nothing', value: null },
      { key: 'veil.pipeline', value: Buffer.from('forged') },
    ];
    await kafka.handler!(batch([rec(0, '{"email":"a@b.c"}', headers)]), beat);
    const out = kafka.committed[0]!.headers;
    expect(out.slice(0, 5)).toEqual(headers.slice(0, 5));
    expect(out.filter((h) => h.key === 'veil.pipeline').map((h) => h.value!.toString())).toEqual(['p']);
  });

  it('at-least-once: sends, then commits the offset outside a transaction', async () => {
    const kafka = new FakeKafka();
    await pipeline(kafka, jsonSerde(), 'at-least-once').start();
    await kafka.handler!(batch([rec(5, '{"email":"a@b.c"}')]), beat);
    expect(kafka.committed.map((r) => r.topic)).toEqual(['clean']);
    expect(kafka.offsets.get('raw/0')).toBe('6');
  });

  it('re-creates a consumer that crashed for good', async () => {
    const kafka = new FakeKafka();
    const p = await started(kafka);
    kafka.events.crashed!(new Error('boom'), false);
    await new Promise((r) => setTimeout(r, 20));
    expect(kafka.consumersCreated).toBe(2);
    await p.stop();
  });

  it('refuses to start a pipeline whose identity may not protect its fields', () => {
    const kafka = new FakeKafka();
    expect(
      () =>
        new ProtectPipeline({
          name: 'p',
          config: { ...config.pipelines.p!, fields: [{ path: 'name', field: 'Customer.name' }], roles: ['support'], rightsEvidences: { Role: 'support' } },
          configVersion: 'x',
          engine: new Engine({ config: config.engine, keys: keysFor(config.engine) }),
          kafka,
          serde: jsonSerde(),
          metrics: new StreamMetrics(),
          log: pino({ level: 'silent' }),
        }),
    ).toThrow(/not granted/);
  });
  describe('look-ahead: the next batch protected while the current one commits', () => {
    const run = (from: number, n: number) => Array.from({ length: n }, (_, i) => rec(from + i, `{"id":${from + i},"email":"u${from + i}@example.com"}`));
    async function withLookAhead() {
      const kafka = new FakeKafka();
      const protector = countingProtector();
      const p = pipeline(kafka, jsonSerde(), 'exactly-once', protector);
      await p.start();
      kafka.events.assigned!({ raw: [0] });
      return { kafka, protector };
    }

    it('protects an offered batch once, and commits it like any other', async () => {
      const { kafka, protector } = await withLookAhead();
      const first = run(0, 1500);
      const next = run(1500, 2500);
      await kafka.handler!(batch(first), beat);
      kafka.lookAhead!('raw', 0, next);
      // offered again while it is known: not protected twice
      kafka.lookAhead!('raw', 0, next);
      expect(protector.records).toBe(4000);
      await kafka.handler!(batch(next), beat);
      expect(protector.records).toBe(4000);
      expect(ids(kafka)).toEqual([...first, ...next].map((r) => Number(r.offset)));
      expect(kafka.committed.every((r) => !r.value!.toString().includes('@example.com'))).toBe(true);
      expect(kafka.offsets.get('raw/0')).toBe('4000');
    });

    it('a batch other than the one offered protects afresh; an offer it overtook is dropped, one ahead of it is kept', async () => {
      const { kafka, protector } = await withLookAhead();
      const a = run(0, 10);
      const b = run(10, 10);
      kafka.lookAhead!('raw', 0, b);
      await kafka.handler!(batch(a), beat); // a retry from memory comes before the offered batch
      expect(protector.records).toBe(20);
      await kafka.handler!(batch(b), beat);
      expect(protector.records).toBe(20);
      const c = run(20, 10);
      kafka.lookAhead!('raw', 0, c);
      const shorter = c.slice(0, 5); // same start, other length: protected afresh, the offer dropped
      await kafka.handler!(batch(shorter), beat);
      await kafka.handler!(batch(c.slice(5)), beat);
      expect(protector.records).toBe(20 + 10 + 5 + 5);
      expect(ids(kafka)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    });

    it('a look-ahead that failed fails its batch retriably; the batch read again protects afresh and commits', async () => {
      const { kafka, protector } = await withLookAhead();
      const b = run(0, 10);
      protector.failing = 1;
      kafka.lookAhead!('raw', 0, b);
      await expect(kafka.handler!(batch(b), beat)).rejects.toSatisfy((e) => code(e) === 'TRANSACTION_ABORTED');
      expect(kafka.committed).toEqual([]);
      await kafka.handler!(batch(b), beat);
      expect(ids(kafka)).toEqual(b.map((r) => Number(r.offset)));
      expect(protector.records).toBe(20);
    });

    it('a rebalance drops what was protected ahead', async () => {
      const { kafka, protector } = await withLookAhead();
      const b = run(0, 10);
      kafka.lookAhead!('raw', 0, b);
      kafka.events.assigned!({ raw: [0] });
      await kafka.handler!(batch(b), beat);
      expect(protector.records).toBe(20);
      expect(ids(kafka)).toEqual(b.map((r) => Number(r.offset)));
    });
  });
  describe('outcomes released to the protector (a worker pool reuses their buffers)', () => {
    /** a FakeKafka whose sends take a while and whose `sending` counts the sends not yet settled */
    class SlowKafka extends FakeKafka {
      sending = 0;
      failSends = 0;
      override async producer(options: { transactionalId?: string }) {
        const p = await super.producer(options);
        return {
          ...p,
          transaction: async () => {
            const tx = await p.transaction();
            return {
              ...tx,
              send: async (r: Parameters<typeof tx.send>[0]) => {
                this.sending++;
                try {
                  await new Promise((resolve) => setTimeout(resolve, 5));
                  if (this.failSends > 0 && this.failSends-- > 0) throw new Error('broker gone');
                  await tx.send(r);
                } finally {
                  this.sending--;
                }
              },
            };
          },
        };
      }
    }
    async function releasing() {
      const kafka = new SlowKafka();
      const counting = countingProtector();
      const released: { outcomes: readonly ChunkOutcome[]; sending: number }[] = [];
      const protector = { ...counting, release: (outcomes: readonly ChunkOutcome[]) => void released.push({ outcomes, sending: kafka.sending }) };
      const p = pipeline(kafka, jsonSerde(), 'exactly-once', protector);
      await p.start();
      kafka.events.assigned!({ raw: [0] });
      return { kafka, released };
    }
    const many = (n: number) => Array.from({ length: n }, (_, i) => rec(i, `{"id":${i},"email":"u${i}@example.com"}`));

    it('each chunk once, after every send of the batch settled', async () => {
      const { kafka, released } = await releasing();
      await kafka.handler!(batch(many(2500)), beat);
      expect(released.map((r) => r.outcomes.length)).toEqual([1000, 1000, 500]);
      expect(released.every((r) => r.sending === 0)).toBe(true);
      expect(new Set(released.map((r) => r.outcomes)).size).toBe(3);
      expect(ids(kafka)).toEqual(many(2500).map((r) => Number(r.offset)));
    });

    it('also when a send fails: released once the sends settled, and the batch read again is protected afresh', async () => {
      const { kafka, released } = await releasing();
      kafka.failSends = 1;
      await expect(kafka.handler!(batch(many(1500)), beat)).rejects.toSatisfy((e) => code(e) === 'TRANSACTION_ABORTED');
      expect(released.map((r) => r.outcomes.length)).toEqual([1000, 500]);
      expect(released.every((r) => r.sending === 0)).toBe(true);
      await kafka.handler!(batch(many(1500)), beat);
      expect(released).toHaveLength(4);
      expect(new Set(released.map((r) => r.outcomes)).size).toBe(4);
      expect(ids(kafka)).toEqual(many(1500).map((r) => Number(r.offset)));
    });
  });
  it('a batch stuck in flight (a call that never answers) is recovered: producers abandoned, consumer re-created, the batch read again and committed once', async () => {
    const kafka = new FakeKafka();
    const p = emailProtectPipeline(config, kafka, { config: { ...config.pipelines.p!, delivery: 'exactly-once' }, stallMs: 2000 });
    await p.start();
    kafka.events.assigned!({ raw: [0] });
    kafka.hangNextCommit = true;
    const stuck = kafka.handler!(batch([rec(0, '{"id":0,"email":"a@b.c"}')]), beat);
    stuck.catch(() => undefined);
    // fetches go on meanwhile: they are no progress while the batch is stuck
    const fetching = setInterval(() => kafka.events.fetched?.(), 100);
    try {
      await expect.poll(() => kafka.consumersCreated, { timeout: 8000, interval: 100 }).toBe(2);
    } finally {
      clearInterval(fetching);
    }
    expect(kafka.producersDisconnected).toBeGreaterThanOrEqual(1);
    kafka.events.assigned!({ raw: [0] });
    await kafka.handler!(batch([rec(0, '{"id":0,"email":"a@b.c"}')]), beat);
    expect(ids(kafka)).toEqual([0]);
    expect(p.health()).toEqual({ healthy: true });
    await p.stop();
  }, 15_000);
});

describe('ProtectPipeline.follow: a configuration version published while it runs', () => {
  const next = veilConfigOrFail(
    `${EXAMPLE_CONFIG_TEXT}\npipelines:\n${pipelineEntry({
      raw: 'raw',
      clean: 'clean',
      dlq: 'dlq',
      fields: ['{ path: email, field: Customer.email }', '{ path: name, field: Customer.name }'],
      settings: ['missing: dead-letter'],
    })}`,
  );
  const engineOf = () => new Engine({ config: next.engine, keys: keysFor(next.engine) });
  const record = (offset: number) => rec(offset, JSON.stringify({ id: offset, email: 'a@example.com', name: 'Ada' }));

  it('a batch in flight finishes under the old version; the next one protects the new fields and says the new version', async () => {
    const kafka = new FakeKafka();
    const inner = countingProtector();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const reloads: unknown[] = [];
    // as the worker pool does: a reload binds the version's configuration in the protection threads
    let current: { protectChunk(items: readonly ChunkItem[]): Promise<ChunkOutcome[]> } = inner;
    const slow = {
      ...inner,
      protectChunk: async (items: readonly ChunkItem[]) => {
        await gate;
        return current.protectChunk(items);
      },
      reload: async (what: unknown) => {
        reloads.push(what);
        current = new RecordProtector({ name: 'p', config: next.pipelines.p!, engine: engineOf(), serde: jsonSerde() });
      },
    };
    const p = pipeline(kafka, jsonSerde(), 'exactly-once', slow);
    await p.start();
    kafka.events.assigned!({ raw: [0] });
    const first = kafka.handler!(batch([record(0)]), beat);
    const following = p.follow({
      config: next.pipelines.p!,
      configVersion: next.version,
      engine: engineOf(),
      serde: jsonSerde(),
      configFile: '/data/config-versions/2.yaml',
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(reloads).toEqual([]); // waits for the batch in flight
    release();
    await first;
    await following;
    expect(reloads).toEqual([{ keys: true, configFile: '/data/config-versions/2.yaml' }]);
    const old = kafka.committed[0]!;
    expect(headerValue(old.headers, 'veil.config.version')!.toString()).toBe(config.version);
    expect(headerValue(old.headers, 'veil.protected.fields')!.toString()).toBe('email');
    await kafka.handler!(batch([record(1)]), beat);
    const now = kafka.committed[1]!;
    expect(next.version).not.toBe(config.version);
    expect(headerValue(now.headers, 'veil.config.version')!.toString()).toBe(next.version);
    expect(headerValue(now.headers, 'veil.protected.fields')!.toString()).toBe('email,name');
    await p.stop();
  });

  it('a batch that never finishes does not hold the change forever: it goes ahead after the recovery wait', async () => {
    const kafka = new FakeKafka();
    const stuck = { protectChunk: () => new Promise<ChunkOutcome[]>(() => undefined), close: async () => undefined };
    const p = emailProtectPipeline(config, kafka, { protector: stuck, stallMs: 400 });
    await p.start();
    kafka.events.assigned!({ raw: [0] });
    void kafka.handler!(batch([record(0)]), beat).catch(() => undefined);
    const started = Date.now();
    await p.follow({ config: next.pipelines.p!, configVersion: next.version, engine: engineOf(), serde: jsonSerde() });
    expect(Date.now() - started).toBeLessThan(2_000);
    // (not stopped: its batch never ends; the fake port holds nothing else)
  });

  it('in this thread: the new fields are protected from the next batch on', async () => {
    const kafka = new FakeKafka();
    const p = await started(kafka);
    await kafka.handler!(batch([record(0)]), beat);
    await p.follow({ config: next.pipelines.p!, configVersion: next.version, engine: engineOf(), serde: jsonSerde() });
    await kafka.handler!(batch([record(1)]), beat);
    const [before, after] = kafka.committed.map((r) => JSON.parse(r.value!.toString()) as { name: string; email: string });
    expect(before!.name).toBe('Ada');
    expect(after!.name).not.toBe('Ada');
    expect(after!.email).not.toBe('a@example.com');
    await p.stop();
  });

  it.each([
    ['sink', { sink: { topic: 'elsewhere' } }],
    ['source', { source: { topics: ['raw', 'raw2'] } }],
    ['format', { format: 'avro' as const }],
    ['deadLetterTopic', { deadLetterTopic: 'dlq2' }],
  ])('a version that changes the %s needs a restart: CONFIG_INVALID, and the running version stays', async (what, change) => {
    const kafka = new FakeKafka();
    const p = await started(kafka);
    const error = await p.follow({ config: { ...next.pipelines.p!, ...change }, configVersion: next.version, engine: engineOf(), serde: jsonSerde() }).then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string },
    );
    expect(error).toMatchObject({ code: 'CONFIG_INVALID' });
    expect(error!.message).toContain(what);
    await kafka.handler!(batch([record(0)]), beat);
    expect(JSON.parse(kafka.committed[0]!.value!.toString()).name).toBe('Ada');
    await p.stop();
  });

  it('a version whose rights no longer let the pipeline protect a field is refused; the running version stays', async () => {
    const kafka = new FakeKafka();
    const p = await started(kafka);
    const refused = {
      ...next.pipelines.p!,
      fields: [
        { path: 'email', field: 'Customer.email' },
        { path: 'name', field: 'Customer.nickname' },
      ],
    };
    await expect(p.follow({ config: refused, configVersion: next.version, engine: engineOf(), serde: jsonSerde() })).rejects.toMatchObject({
      code: 'FIELD_UNKNOWN',
    });
    await kafka.handler!(batch([record(0)]), beat);
    expect(headerValue(kafka.committed[0]!.headers, 'veil.protected.fields')!.toString()).toBe('email');
    await p.stop();
  });
});

describe("the unmapped guard's report mode (unmapped: report)", () => {
  const reportConfig = emailPipelineConfig(['unmapped: report']);
  const reporting = (kafka: FakeKafka, metrics: StreamMetrics, lines: string[]) =>
    emailProtectPipeline(reportConfig, kafka, { metrics, log: pino({ level: 'info' }, { write: (line: string) => lines.push(line) }) });

  it('passes what the guard would refuse, protected as mapped, and counts and logs it by path and kind (never the value)', async () => {
    const kafka = new FakeKafka();
    const metrics = new StreamMetrics();
    const lines: string[] = [];
    const p = reporting(kafka, metrics, lines);
    await p.start();
    kafka.events.assigned!({ raw: [0] });
    await kafka.handler!(
      batch([
        rec(1, '{"id":1,"email":"a@example.com"}'),
        rec(2, '{"id":2,"email":"b@example.com","backupEmail":"bob.backup@example.com"}'),
        rec(3, '{"id":3,"email":"c@example.com","backupEmail":"carol.backup@example.com"}'),
        rec(4, '{oops'),
      ]),
      beat,
    );
    const clean = kafka.committed.filter((r) => r.topic === 'clean').map((r) => JSON.parse(r.value!.toString()) as { email: string; backupEmail?: string });
    expect(clean.map((r) => (r as { id?: number }).id)).toEqual([1, 2, 3]);
    // report mode protects nothing it finds: the mapped email is protected, the backup passes in clear
    expect(clean.map((r) => r.email).some((e) => e.includes('@example.com'))).toBe(false);
    expect(clean[1]!.backupEmail).toBe('bob.backup@example.com');
    expect(kafka.committed.filter((r) => r.topic === 'dlq').map((r) => headerValue(r.headers, 'veil.error.code')?.toString())).toEqual(['RECORD_MALFORMED']);
    const text = await metrics.registry.metrics();
    expect(text).toContain('veil_stream_unmapped_reported_total{pipeline="p",path="backupEmail",kind="email"} 2');
    expect(text).not.toMatch(/veil_stream_unmapped_findings_total\{/);
    const warned = lines.filter((l) => l.includes('report mode'));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain('"path":"backupEmail"');
    expect(lines.join('')).not.toMatch(/backup@example\.com/);
  });
});
