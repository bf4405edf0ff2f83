import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_CONFIG } from '../../src/env/index.ts';
import type { PipelineConfig } from '../../src/stream/config/index.ts';
import { BROKERS, REGISTRY_URL, createTopics, javaConsumeHeaders, kafkaClient, steadyProducer, topicsFor, expectKeyOrder } from './kafka.ts';
import { spawnStream, waitFor } from './processes.ts';
import { streamClients } from './stream-clients.ts';

const TOTAL = 1500;
const MASTER = 'e'.repeat(64);

/** One registry format, as the crash suite needs it. */
export interface CrashFormat {
  format: PipelineConfig['format'];
  /** extra lines of the pipeline (indented 4), e.g. `    validate: true` */
  extraYaml?: string;
  /** registers the raw schema under `subject` (through the registry's API: no client library sets a compatibility level); its id */
  register(subject: string): Promise<number>;
  /** a raw record value in the wire format */
  encode(rawId: number, record: { id: number; email: string; seq: number }): Buffer;
  /** a clean record value's id field */
  idOf(value: Buffer): Promise<number> | number;
  /** the clean schema is the raw one (nothing to retype), so the registry gives it the raw id */
  cleanIsRaw?: boolean;
  /** the whole clean record (the Java verifier's bytes) */
  decode(value: Buffer): Promise<{ id: number; email: string; seq: number }>;
}

/**
 * The crash test (stream-crash.test.ts) for a schema-registry format, shorter: wire-format records
 * flow raw → clean while the processor is SIGKILLed twice after real progress; Kafka's Java
 * client, read_committed, then proves 0 lost, 0 duplicated (by record id), every record behind
 * the one clean schema id and the order of each key kept. The broker faults are
 * format-independent and stay with the JSON crash test. One client: the default (librdkafka)
 * unless VEIL_TEST_STREAM_CLIENTS names others.
 */
export function formatCrashSuite(f: CrashFormat): void {
  const client = streamClients().includes('librdkafka') ? 'librdkafka' : streamClients()[0]!;
  describe(`stream on ${client}: ${f.format} exactly-once under crashes (real broker, real registry, real processes)`, () => {
    const t = topicsFor(`crash-${f.format}`);
    const kafka = kafkaClient(`crash-${f.format}`);
    let dataDir: string;
    let configFile: string;
    let rawId: number;
    const seen = new Set<number>();
    let verifier: ReturnType<typeof kafka.consumer>;
    const started: ReturnType<typeof spawnStream>[] = [];

    beforeAll(async () => {
      await createTopics(kafka, [t.raw, t.clean], 2);
      await createTopics(kafka, [t.dlq], 1);
      rawId = await f.register(`${t.raw}-value`);
      dataDir = await mkdtemp(join(tmpdir(), `veil-crash-${f.format}-`));
      configFile = join(dataDir, 'config.yaml');
      await writeFile(
        configFile,
        `${readFileSync(EXAMPLE_CONFIG, 'utf8')}
pipelines:
  crash:
    source: { topics: [${t.raw}] }
    sink: { topic: ${t.clean} }
    deadLetterTopic: ${t.dlq}
    format: ${f.format}
${f.extraYaml ?? ''}
    groupId: veil-${t.id}
    fields: [ { path: email, field: Customer.email } ]
    key: { field: Customer.email }
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
`,
      );
      verifier = kafka.consumer({ groupId: `verifier-${t.id}`, readUncommitted: false });
      await verifier.connect();
      await verifier.subscribe({ topic: t.clean, fromBeginning: true });
      await verifier.run({ eachMessage: async ({ message }) => void seen.add(await f.idOf(message.value!)) });
    }, 120_000);

    afterAll(async () => {
      for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
      await verifier?.disconnect().catch(() => undefined);
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    }, 60_000);

    it('loses nothing, duplicates nothing, keeps per-key order through 2 SIGKILLs', async () => {
      const env = {
        KAFKA_BROKERS: BROKERS.join(','),
        SCHEMA_REGISTRY_URL: REGISTRY_URL,
        VEIL_MASTER_KEY: MASTER,
        VEIL_KAFKA_SESSION_TIMEOUT_MS: '6000',
        VEIL_STREAM_CLIENT: client,
      };
      const args = ['--config', configFile, '--data-dir', dataDir, '--port', '0'];
      const logs: string[] = [];
      const spawn = () => {
        const p = spawnStream(args, env);
        started.push(p);
        p.once('close', () => logs.push(p.output()));
        return p;
      };
      let processor = spawn();
      const producer = await steadyProducer(kafka);
      const producing = (async () => {
        for (let round = 0; round < 10; round++) {
          const records = Array.from({ length: TOTAL / 10 }, (_, i) => {
            const id = round * (TOTAL / 10) + i;
            const email = `user${id % 41}@example.com`;
            return { key: email, value: f.encode(rawId, { id, email, seq: id }) };
          });
          await producer.send(t.raw, records);
          await new Promise((r) => setTimeout(r, 300));
        }
      })();
      producing.catch(() => undefined);

      for (let kill = 1; kill <= 2; kill++) {
        await waitFor(() => seen.size > kill * 400, 120_000, `progress before kill ${kill}`);
        processor.kill('SIGKILL');
        await new Promise((r) => processor.once('exit', r));
        processor = spawn();
      }
      await producing;
      await producer.close();
      try {
        await waitFor(() => seen.size >= TOTAL, 180_000, 'all records in the clean topic');
      } catch (e) {
        console.log(
          `crash test: ${f.format} stalled at ${seen.size} of ${TOTAL} ids\n${[...logs, processor.output()]
            .join('\n----\n')
            .split('\n')
            .filter((l) => /"level":(40|50|60)|halted|crashed/.test(l))
            .slice(-60)
            .join('\n')}`,
        );
        throw e;
      }
      processor.kill('SIGTERM');
      await new Promise((r) => processor.once('close', r));

      const java = await Promise.all(
        (await javaConsumeHeaders(t.clean)).map(async (r) => ({ ...r, cleanId: r.value.readUInt32BE(1), record: await f.decode(r.value) })),
      );
      const ids = java.map((r) => r.record.id);
      const lost = TOTAL - new Set(ids).size;
      const duplicated = ids.length - new Set(ids).size;
      console.log(`crash test: ${f.format} on ${client}, Java read_committed ${ids.length} records, ${duplicated} duplicated, ${lost} lost`);
      expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
      expect(new Set(java.map((r) => r.value[0]))).toEqual(new Set([0]));
      expect(new Set(java.map((r) => r.cleanId)).size).toBe(1);
      if (f.cleanIsRaw) expect(java[0]!.cleanId).toBe(rawId);
      else expect(java[0]!.cleanId).not.toBe(rawId);
      expect(expectKeyOrder(java)).toBe(41);
    }, 400_000);
  });
}
