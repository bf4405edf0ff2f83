import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type IHeaders } from 'kafkajs';
import { expect } from 'vitest';
import { kafkaLibs } from './kafka-libs.ts';

export const BROKERS = (process.env.KAFKA_BROKERS ?? '127.0.0.1:19092').split(',');
export const REGISTRY_URL = process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:18081/apis/ccompat/v7';

export function kafkaClient(clientId = 'veil-test'): Kafka {
  return new Kafka({ clientId, brokers: BROKERS, logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 200 } });
}

/** Unique topic names for one test: raw.X, clean.X, dlq.X. */
export function topicsFor(label: string): { id: string; raw: string; clean: string; dlq: string } {
  const id = `${label}-${randomBytes(4).toString('hex')}`;
  return { id, raw: `raw.${id}`, clean: `clean.${id}`, dlq: `dlq.${id}` };
}

export async function createTopics(kafka: Kafka, topics: string[], partitions = 1, config: Record<string, string> = {}): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  const configEntries = Object.entries(config).map(([name, value]) => ({ name, value }));
  // a broker that just started may answer its own metadata before it leads the new partitions
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.createTopics({ topics: topics.map((topic) => ({ topic, numPartitions: partitions, configEntries })), waitForLeaders: true });
      break;
    } catch (e) {
      if (attempt >= 5 || !/does not host this topic-partition|LEADER_NOT_AVAILABLE|leader/i.test((e as Error).message)) throw e;
      await new Promise((r) => setTimeout(r, 500 * attempt));
    }
  }
  await admin.disconnect();
}

export interface Produced {
  key?: string | Buffer | null;
  value: string | Buffer | null;
  headers?: Record<string, string>;
  partition?: number;
}

export async function produce(kafka: Kafka, topic: string, records: Produced[]): Promise<void> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let i = 0; i < records.length; i += 500) {
    await producer.send({
      topic,
      acks: -1,
      messages: records
        .slice(i, i + 500)
        .map((r) => ({ key: r.key ?? null, value: r.value, headers: r.headers as IHeaders, ...(r.partition !== undefined ? { partition: r.partition } : {}) })),
    });
  }
  await producer.disconnect();
}

export interface Consumed {
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, string>;
}

/** Reads a topic from the beginning with read_committed until `count` records arrived (or fails at timeout). */
export async function consume(kafka: Kafka, topic: string, count: number, timeoutMs = 60_000, settleMs = 500): Promise<Consumed[]> {
  const consumer = kafka.consumer({ groupId: `verify-${randomBytes(6).toString('hex')}`, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got: Consumed[] = [];
  let done: () => void;
  const finished = new Promise<void>((r) => (done = r));
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(message.headers ?? {})) if (v !== undefined) headers[k] = String(Array.isArray(v) ? v[0] : v);
      got.push({ partition, offset: message.offset, key: message.key, value: message.value, headers });
      if (got.length >= count) done();
    },
  });
  const timer = new Promise<void>((r) => setTimeout(r, timeoutMs));
  await Promise.race([finished, timer]);
  // a little longer, so that extra (duplicate) records would show up too
  await new Promise((r) => setTimeout(r, settleMs));
  await consumer.disconnect();
  return got;
}

/**
 * Produces with Kafka's own Java console producer (a second, non-kafkajs client, from the jars
 * test-env.sh installed), which can write what kafkajs cannot: null header values. A line is
 * `h1:v1,h2:NULL<TAB>key<TAB>value`; NULL is a null.
 */
export async function javaProduce(topic: string, lines: string[], brokers = BROKERS.join(',')): Promise<void> {
  const { execFile } = await import('node:child_process');
  const libs = kafkaLibs();
  await new Promise<void>((resolve, reject) => {
    const child = execFile(
      'java',
      [
        '-cp',
        libs,
        'kafka.tools.ConsoleProducer',
        '--bootstrap-server',
        brokers,
        '--topic',
        topic,
        '--property',
        'parse.headers=true',
        '--property',
        'parse.key=true',
        '--property',
        'null.marker=NULL',
        '--producer-property',
        'acks=all',
      ],
      { timeout: 120_000 },
      (error) => (error ? reject(error) : resolve()),
    );
    child.stdin!.end(`${lines.join('\n')}\n`);
  });
}

/**
 * One idempotent producer for a whole test that restarts or pauses the broker: its sends retry
 * through the outage with the same producer id and sequence numbers, so a retry never writes a
 * raw record twice (a fresh producer per round could, and could fail to connect mid-restart).
 */
export async function steadyProducer(kafka: Kafka): Promise<{ send(topic: string, records: Produced[]): Promise<void>; close(): Promise<void> }> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 100, initialRetryTime: 300, maxRetryTime: 2000 } });
  await producer.connect();
  return {
    async send(topic, records) {
      await producer.send({ topic, acks: -1, messages: records.map((r) => ({ key: r.key ?? null, value: r.value, headers: r.headers as IHeaders })) });
    },
    close: () => producer.disconnect(),
  };
}

/**
 * Reads a whole topic read_committed with Kafka's own Java client (test/helpers/java/
 * ReadCommitted.java, run as a single-file source on the jars test-env.sh installed) — the
 * reference implementation of transactions — to verify exactly-once without trusting kafkajs.
 */
export async function javaConsumeCommitted(topic: string, brokers = BROKERS.join(',')): Promise<{ partition: number; offset: string; value: string }[]> {
  const { execFile } = await import('node:child_process');
  const libs = kafkaLibs();
  const source = new URL('./java/ReadCommitted.java', import.meta.url).pathname;
  const out = await new Promise<string>((resolve, reject) => {
    execFile(
      'java',
      ['-cp', libs, '-Dlog4j.configuration=file:/dev/null', source, brokers, topic],
      { timeout: 300_000, maxBuffer: 256 << 20 },
      (error, stdout) => (error ? reject(error) : resolve(stdout)),
    );
  });
  return out.split('\n').flatMap((line) => {
    const m = /^(\d+) (\d+) (.*)$/.exec(line);
    return m ? [{ partition: Number(m[1]), offset: m[2]!, value: m[3]! }] : [];
  });
}

/** A consumer group's state and members (group.instance.id, client id, partitions) as Kafka's own AdminClient describes them (test/helpers/java/DescribeGroup.java). */
export async function javaDescribeGroup(
  group: string,
  brokers = BROKERS.join(','),
): Promise<{ state: string; members: { instanceId: string | null; clientId: string; partitions: number }[] }> {
  const { execFile } = await import('node:child_process');
  const libs = kafkaLibs();
  const source = new URL('./java/DescribeGroup.java', import.meta.url).pathname;
  const out = await new Promise<string>((resolve, reject) => {
    execFile('java', ['-cp', libs, '-Dlog4j.configuration=file:/dev/null', source, brokers, group], { timeout: 120_000 }, (error, stdout) =>
      error ? reject(error) : resolve(stdout),
    );
  });
  const members = [...out.matchAll(/^member (\S+) (\S+) (\d+)$/gm)].map((m) => ({
    instanceId: m[1] === '-' ? null : m[1]!,
    clientId: m[2]!,
    partitions: Number(m[3]),
  }));
  return { state: /^state (\S+)$/m.exec(out)?.[1] ?? 'unknown', members };
}

/**
 * Reads a whole topic read_committed with Kafka's own Java client (test/helpers/java/
 * ReadHeaders.java): each record's value and its headers in record order, values as bytes or
 * null — what another client sees, not what kafkajs makes of it.
 */
export async function javaConsumeHeaders(
  topic: string,
  brokers = BROKERS.join(','),
): Promise<{ partition: number; offset: string; value: Buffer; headers: { key: string; value: Buffer | null }[] }[]> {
  return (await javaConsumeRecords(topic, brokers, false)).map(({ key: _, ...r }) => r);
}

/** javaConsumeHeaders with each record's key too (null for none). */
export async function javaConsumeRecords(
  topic: string,
  brokers = BROKERS.join(','),
  keys = true,
): Promise<{ partition: number; offset: string; key: Buffer | null; value: Buffer; headers: { key: string; value: Buffer | null }[] }[]> {
  const { execFile } = await import('node:child_process');
  const libs = kafkaLibs();
  const source = new URL('./java/ReadHeaders.java', import.meta.url).pathname;
  const out = await new Promise<string>((resolve, reject) => {
    execFile(
      'java',
      ['-cp', libs, '-Dlog4j.configuration=file:/dev/null', source, brokers, topic, ...(keys ? ['keys'] : [])],
      { timeout: 300_000, maxBuffer: 256 << 20 },
      (error, stdout) => (error ? reject(error) : resolve(stdout)),
    );
  });
  const bytes = (hex: string) => (hex === '-' ? null : Buffer.from(hex, 'hex'));
  return out.split('\n').flatMap((line) => {
    const m = (
      keys ? /^(\d+) (\d+) ([0-9a-f]*|-) ([0-9a-f]*|-)((?: [0-9a-f]*:(?:[0-9a-f]*|-))*)$/ : /^(\d+) (\d+)()() ([0-9a-f]*|-)((?: [0-9a-f]*:(?:[0-9a-f]*|-))*)$/
    ).exec(line);
    if (!m) return [];
    const [, partition, offset, key, value, headerText] = keys ? m : [m[0], m[1], m[2], '-', m[5], m[6]];
    const headers = headerText!.trim()
      ? headerText!
          .trim()
          .split(' ')
          .map((h) => {
            const [k, v] = h.split(':') as [string, string];
            return { key: Buffer.from(k, 'hex').toString('utf8'), value: bytes(v) };
          })
      : [];
    return [{ partition: Number(partition), offset: offset!, key: bytes(key!), value: bytes(value!) ?? Buffer.alloc(0), headers }];
  });
}

/**
 * Per-key order in a clean topic: every record of a key in one partition, its ids in production
 * order. Fails the test otherwise; returns how many keys there were.
 */
export function expectKeyOrder(records: readonly { partition: number; record: { email: string; id: number } }[]): number {
  const perKey = new Map<string, { partition: number; ids: number[] }>();
  for (const r of records) {
    const entry = perKey.get(r.record.email) ?? { partition: r.partition, ids: [] };
    expect(r.partition).toBe(entry.partition);
    entry.ids.push(r.record.id);
    perKey.set(r.record.email, entry);
  }
  for (const { ids } of perKey.values()) expect(ids).toEqual([...ids].sort((a, b) => a - b));
  return perKey.size;
}
