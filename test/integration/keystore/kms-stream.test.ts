import { CreateKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROKERS, createTopics, javaConsumeCommitted, kafkaClient, produce, topicsFor } from '../../helpers/kafka.ts';
import { awsKmsEnv, startMoto, type Moto } from '../../helpers/moto.ts';
import { freePorts, sigtermAndWait, spawnStream, waitFor } from '../../helpers/processes.ts';
import { pipelineYaml } from '../../helpers/stream.ts';
import { probeUntilRefused } from '../../helpers/lease-probe.ts';
import { sampleSum } from '../../helpers/prometheus.ts';

/** probe records' ids start here */
const PROBES = 10_000;

interface LogLine {
  msg: string;
  partition?: number;
}

/** a JSON log line (undefined for anything else, a line still being written included) */
function logLine(line: string): LogLine | undefined {
  try {
    return JSON.parse(line) as LogLine;
  } catch {
    return undefined;
  }
}

/** veil_stream_records_in_total of the stream process on `port`: records read and committed */
async function recordsIn(port: number): Promise<number> {
  return sampleSum(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), 'veil_stream_records_in_total', {});
}

/**
 * A protect pipeline whose keys are wrapped by an AWS KMS key (moto_server): with the KMS
 * unreachable past the keys' lifetime nothing more reaches the clean topic (batches are read
 * again, nothing is dead-lettered or skipped) and /healthz is red; when the KMS is back every
 * record arrives exactly once (Kafka's Java client, read_committed, by record id).
 */
describe('stream protect with the KEK in a KMS: fail closed, then catch up', () => {
  const t = topicsFor('kms-stream');
  const kafka = kafkaClient('kms-stream');
  let moto: Moto;
  let keyId: string;
  let dataDir: string;
  let processor: ReturnType<typeof spawnStream> | undefined;

  beforeAll(async () => {
    moto = await startMoto();
    const admin = new KMSClient({ region: 'eu-west-1', endpoint: moto.endpoint, credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' } });
    keyId = (await admin.send(new CreateKeyCommand({}))).KeyMetadata!.KeyId!;
    admin.destroy();
    dataDir = await mkdtemp(join(tmpdir(), 'veil-kms-stream-'));
    await createTopics(kafka, [t.raw, t.clean, t.dlq], 2);
  }, 180_000);
  afterAll(async () => {
    if (processor && processor.exitCode === null) processor.kill('SIGKILL');
    moto?.resume();
    await moto?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('stops writing while the keys may not be used, says why on /healthz, and loses and duplicates nothing', async () => {
    const configFile = join(dataDir, 'config.yaml');
    await writeFile(configFile, pipelineYaml(t, 'json'));
    const port = await freePorts(1);
    const env = {
      KAFKA_BROKERS: BROKERS.join(','),
      ...awsKmsEnv(moto.endpoint, keyId, 4),
      // one protection thread: the probes below show when its own lease lapsed
      VEIL_PROTECT_THREADS: '1',
    };
    // provision the keys under the KMS first, as a deployment would (veil config provision)
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const { ROOT } = await import('../../helpers/processes.ts');
    await promisify(execFile)(join(ROOT, 'bin/veil'), ['config', 'provision', '--config', configFile, '--data-dir', dataDir], {
      env: { ...process.env, ...env },
    });
    processor = spawnStream(['--config', configFile, '--data-dir', dataDir, '--port', String(port)], env);
    const record = (i: number) => ({
      key: `c${i}@example.com`,
      value: JSON.stringify({ id: i, email: `c${i}@example.com`, cards: [], profile: { name: `Person ${i}` } }),
    });
    const clean = async () => (await javaConsumeCommitted(t.clean)).map((r) => (JSON.parse(r.value) as { id: number }).id);
    /** the batches the processor aborted (its warnings), those logged after `from` characters of its output */
    const aborts = (from = 0) =>
      processor!
        .output()
        .slice(from)
        .split('\n')
        .map(logLine)
        .filter((l): l is LogLine => l?.msg === 'batch aborted; it is read again');
    let probes = { passed: [] as number[], refused: -1 };
    await produce(
      kafka,
      t.raw,
      Array.from({ length: 200 }, (_, i) => record(i)),
    );
    await waitFor(async () => (await clean()).length >= 200, 60_000, 'the first 200 records');

    moto.pause();
    const paused = Date.now();
    try {
      await waitFor(
        async () =>
          (await fetch(`http://127.0.0.1:${port}/healthz`).then(
            (r) => r.status,
            () => 0,
          )) === 503,
        30_000,
        'health red',
      );
      expect(Date.now() - paused).toBeGreaterThanOrEqual(2_500);
      const health = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { kek?: { code: string } };
      expect(health.kek?.code).toBe('KMS_UNAVAILABLE');
      // the protection thread holds its own lease, renewed on its own clock: probes pass until it lapsed too
      probes = await probeUntilRefused({
        firstId: PROBES,
        send: (id) => produce(kafka, t.raw, [record(id)]),
        committed: () => recordsIn(port),
        aborted: async () => aborts().length,
      });
      const before = processor.output().length;
      await produce(
        kafka,
        t.raw,
        Array.from({ length: 200 }, (_, i) => record(200 + i)),
      );
      // each partition's batch read again twice after them, so once with them, and refused: nothing written
      await waitFor(
        () => [0, 1].every((p) => aborts(before).filter((l) => l.partition === p).length >= 2),
        60_000,
        "both partitions' batches refused after the new records",
      );
      expect((await clean()).length).toBe(200 + probes.passed.length);
    } finally {
      moto.resume();
    }
    const all = 400 + probes.passed.length + 1;
    await waitFor(async () => (await clean()).length >= all, 90_000, 'all records after the KMS came back').catch((e: unknown) => {
      // what the processor said (codes and offsets, never values)
      console.log(
        processor!
          .output()
          .split('\n')
          .filter((l) => !/"level":(10|20|30)/.test(l))
          .slice(-80)
          .join('\n'),
      );
      throw e;
    });
    const got = await clean();
    const ids = got.filter((id) => id < PROBES);
    expect({ records: ids.length, unique: new Set(ids).size, min: Math.min(...ids), max: Math.max(...ids) }).toEqual({
      records: 400,
      unique: 400,
      min: 0,
      max: 399,
    });
    expect(got.filter((id) => id >= PROBES).sort((a, b) => a - b)).toEqual([...probes.passed, probes.refused]);
    const dead = await javaConsumeCommitted(t.dlq);
    expect(dead).toHaveLength(0);
    expect((await sigtermAndWait(processor, 30_000)).code).toBe(0);
  }, 240_000);
});
