import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_CONFIG } from '../../../src/env/index.ts';
import { BROKERS, consume, createTopics, kafkaClient, produce, topicsFor } from '../../helpers/kafka.ts';
import { freePorts, spawnStream, waitFor } from '../../helpers/processes.ts';
import { topicsPipelineYaml } from '../../helpers/pipeline-yaml.ts';

/** Two `veil stream protect` processes in one consumer group: they split the partitions, and one takes over when the other stops. */
describe('stream: scaling a consumer group (real broker, two processes)', () => {
  const t = topicsFor('scale');
  const kafka = kafkaClient();
  let dataDir: string;
  let configFile: string;
  const ports = [0, 0];

  const recordsIn = async (port: number): Promise<number> => {
    try {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return Number(/veil_stream_records_in_total\{pipeline="scale"\} (\d+)/.exec(text)?.[1] ?? 0);
    } catch {
      return -1;
    }
  };
  const batch = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => ({ key: `k${from + i}`, value: JSON.stringify({ id: from + i, email: `p${from + i}@example.com` }) }));

  beforeAll(async () => {
    ports[0] = await freePorts(2);
    ports[1] = ports[0] + 1;
    await createTopics(kafka, [t.raw, t.clean], 4);
    await createTopics(kafka, [t.dlq], 1);
    dataDir = await mkdtemp(join(tmpdir(), 'veil-scale-'));
    configFile = join(dataDir, 'config.yaml');
    await writeFile(
      configFile,
      `${readFileSync(EXAMPLE_CONFIG, 'utf8')}
pipelines:
${topicsPipelineYaml('scale', t)}`,
    );
  }, 60_000);
  afterAll(async () => rm(dataDir, { recursive: true, force: true }));

  it('splits the partitions between two instances and hands them all to one when the other stops', async () => {
    const env = { KAFKA_BROKERS: BROKERS.join(','), VEIL_MASTER_KEY: 'f'.repeat(64), VEIL_KAFKA_SESSION_TIMEOUT_MS: '6000' };
    const start = (port: number) => spawnStream(['--config', configFile, '--data-dir', dataDir, '--port', String(port)], env);
    const a = start(ports[0]!);
    const b = start(ports[1]!);
    try {
      await waitFor(async () => (await recordsIn(ports[0]!)) >= 0 && (await recordsIn(ports[1]!)) >= 0, 60_000, 'both instances serving metrics').catch((e) => {
        console.log('instance a:\n', a.output().slice(-2000), '\ninstance b:\n', b.output().slice(-2000));
        throw e;
      });
      // keep producing until both instances have processed records (the group has balanced)
      let produced = 0;
      await waitFor(
        async () => {
          await produce(kafka, t.raw, batch(produced, 100));
          produced += 100;
          return (await recordsIn(ports[0]!)) > 0 && (await recordsIn(ports[1]!)) > 0;
        },
        90_000,
        'both instances to process records',
      );
      const beforeStop = await recordsIn(ports[1]!);

      a.kill('SIGTERM');
      const code = await new Promise((r) => a.once('exit', r));
      expect(code).toBe(0);
      await produce(kafka, t.raw, batch(produced, 400));
      produced += 400;
      const clean = await consume(kafka, t.clean, produced, 90_000);
      const ids = clean.map((r) => JSON.parse(r.value!.toString()).id as number);
      if (new Set(ids).size !== produced) console.log('instance a:\n', a.output().slice(-3000), '\ninstance b:\n', b.output().slice(-3000));
      expect(new Set(ids).size).toBe(produced);
      expect(ids.length).toBe(produced);
      // b now owns every partition, so it processed the records produced after a stopped
      expect((await recordsIn(ports[1]!)) - beforeStop).toBeGreaterThanOrEqual(400);
    } finally {
      for (const p of [a, b]) if (p.exitCode === null) p.kill('SIGKILL');
    }
  }, 240_000);
});
