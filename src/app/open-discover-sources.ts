import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Kafka, logLevel } from 'kafkajs';
import { runPsql } from '../db/psql.ts';

/** A source that cannot be sampled (a bad table name, psql's refusal): its message names the source, never a record. */
export class SampleSourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SampleSourceError';
  }
}

/** One sampled record: its value (a JSON value) and, from Kafka, its key as text. */
export interface Sampled {
  value: unknown;
  key?: string | null;
}

/**
 * Where `veil discover` samples records. Values are parsed, handed to the profiler one by one and
 * never kept, logged or printed; a record that does not parse is counted, not shown.
 */
export interface SampleReport {
  sampled: number;
  unparsable: number;
}

function parsed(text: string, report: SampleReport): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    report.unparsable++;
    return undefined;
  }
}

/** The first `limit` lines of a JSON-lines file. */
export async function sampleFile(file: string, limit: number, each: (s: Sampled) => void): Promise<SampleReport> {
  const report = { sampled: 0, unparsable: 0 };
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) {
    if (report.sampled + report.unparsable >= limit) break;
    if (line.trim() === '') continue;
    const value = parsed(line, report);
    if (value !== undefined) {
      report.sampled++;
      each({ value });
    }
  }
  lines.close();
  return report;
}

/**
 * How a topic's values are read: JSON text, or a Confluent wire format through a schema registry
 * (Avro, JSON Schema, Protobuf: the pipeline formats).
 */
export type TopicFormat = { format: 'json' } | { format: 'avro' | 'json-schema' | 'protobuf'; registryUrl: string };

async function valueReader(format: TopicFormat): Promise<(bytes: Buffer) => Promise<unknown>> {
  if (format.format === 'json') return async (bytes) => JSON.parse(bytes.toString('utf8')) as unknown;
  if (format.format === 'json-schema') {
    return async (bytes) => {
      if (bytes.length < 5 || bytes[0] !== 0) throw new SampleSourceError('not in the wire format');
      return JSON.parse(bytes.subarray(5).toString('utf8')) as unknown;
    };
  }
  const [{ confluentRegistry, CachingRegistry }, formats] = await Promise.all([import('../stream/registry/index.ts'), import('../stream/serde/index.ts').then((serde) => serde.schemaFormats())]);
  const registry = new CachingRegistry(confluentRegistry(format.registryUrl));
  if (format.format === 'protobuf') {
    const serde = formats.protobufSerde({ registry, protectedPaths: [] });
    return (bytes) => serde.decode(bytes);
  }
  const serde = formats.avroSerde({ registry, protectedPaths: [] });
  return async (bytes) => (await serde.decode(bytes)).value;
}

/**
 * Up to `limit` committed records of a topic (in any pipeline format), from
 * the beginning of each partition, by a consumer of a throwaway group that commits nothing and is
 * deleted afterwards. A value that does not decode is counted, not shown.
 */
export async function sampleTopic(brokers: string[], topic: string, limit: number, each: (s: Sampled) => void, format: TopicFormat = { format: 'json' }, timeoutMs = 15_000): Promise<SampleReport> {
  const read = await valueReader(format);
  const kafka = new Kafka({ clientId: 'veil-discover', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  try {
    await admin.connect();
  } catch {
    throw new SampleSourceError(`cannot reach the Kafka brokers ${brokers.join(',')}`);
  }
  const groupId = `veil-discover-${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, readUncommitted: false });
  const report = { sampled: 0, unparsable: 0 };
  try {
    if (!(await admin.listTopics()).includes(topic)) throw new SampleSourceError(`topic ${topic} does not exist`);
    const offsets = await admin.fetchTopicOffsets(topic);
    const available = offsets.reduce((n, p) => n + Math.max(0, Number(p.high) - Number(p.low)), 0);
    const want = Math.min(limit, available);
    if (want === 0) return report;
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      void consumer.run({
        autoCommit: false,
        eachMessage: async ({ message }) => {
          if (report.sampled + report.unparsable >= want) return;
          let value: unknown;
          try {
            value = message.value === null ? undefined : await read(message.value);
          } catch {
            report.unparsable++;
          }
          if (value !== undefined) {
            report.sampled++;
            each({ value, key: message.key === null ? null : message.key.toString('utf8') });
          }
          if (report.sampled + report.unparsable >= want) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
  return report;
}

/** `schema.table` or `table`, each part an SQL identifier (quoted when sent) */
const TABLE = /^([A-Za-z_][A-Za-z0-9_$]*)(?:\.([A-Za-z_][A-Za-z0-9_$]*))?$/;

/** Up to `limit` rows of a PostgreSQL table, each as its JSON object (row_to_json), through psql. */
export async function sampleTable(databaseUrl: string, table: string, limit: number, each: (s: Sampled) => void): Promise<SampleReport> {
  const m = TABLE.exec(table);
  if (!m) throw new SampleSourceError('the table must be named as table or schema.table (letters, digits, _ and $)');
  const name = [m[1], m[2]].filter(Boolean).map((p) => `"${p}"`).join('.');
  const result = await runPsql(databaseUrl, `\\pset format unaligned\n\\pset tuples_only on\nSELECT row_to_json(t)::text FROM ${name} t LIMIT ${Math.floor(limit)};\n`, { singleTransaction: false });
  // psql's error names the table and the database, not a row
  if (result.code !== 0) throw new SampleSourceError(`psql could not read ${table}: ${result.stderr.split('\n')[0]?.replace(/^psql:[^:]*:\d+: /, '') ?? 'error'}`);
  const report = { sampled: 0, unparsable: 0 };
  for (const line of result.stdout.split('\n')) {
    if (line === '') continue;
    const value = parsed(line, report);
    if (value !== undefined) {
      report.sampled++;
      each({ value });
    }
  }
  return report;
}
