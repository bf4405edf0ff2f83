import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStream, type StreamService } from '../../../src/app/open-stream.ts';
import { BROKERS, consume, createTopics, javaDescribeGroup, kafkaClient, produce, REGISTRY_URL, topicsFor } from '../../helpers/kafka.ts';
import { eventually } from '../../helpers/processes.ts';
import { pipelineYaml, STREAM_MASTER } from '../../helpers/stream.ts';

/**
 * Static group membership (issue 31, the Helm chart's VEIL_KAFKA_GROUP_INSTANCE_ID from the pod's
 * name): the pipeline's consumer joins with that group.instance.id, as Kafka's AdminClient sees
 * it; a process restarted with the same id takes the member's place and carries on; kafkajs,
 * which has no static membership, is refused at start rather than silently ignoring the id.
 */
describe('VEIL_KAFKA_GROUP_INSTANCE_ID: static group membership (librdkafka)', () => {
  const kafka = kafkaClient('static-membership');
  const t = topicsFor('static');
  let dataDir = '';
  let configFile = '';
  const started: StreamService[] = [];
  const start = async (env: Record<string, string>, client?: string) => {
    const stream = await openStream({
      configFile,
      dataDir,
      env: { ...STREAM_MASTER, ...env },
      now: () => new Date(),
      brokers: BROKERS,
      registryUrl: REGISTRY_URL,
      development: true,
      ...(client ? { client } : {}),
    });
    started.push(stream);
    await stream.start();
    return stream;
  };
  const record = (id: number) => ({ key: `k${id}`, value: JSON.stringify({ id, email: `user${id}@example.com`, cards: [], profile: { name: 'Ann Lee' } }) });

  afterAll(async () => {
    for (const s of started) await s.stop().catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  });

  it("joins with the pod's id; a restart under the same id carries on as the same member; kafkajs is refused", async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-static-'));
    configFile = join(dataDir, 'config.yaml');
    await writeFile(configFile, pipelineYaml(t, 'json'));
    await createTopics(kafka, [t.raw, t.clean, t.dlq], 2);
    const group = `veil-test-${t.id}`;
    const first = await start({ VEIL_KAFKA_GROUP_INSTANCE_ID: 'veil-protect-7d9f-abcde' });
    await produce(kafka, t.raw, [1, 2, 3, 4].map(record));
    await consume(kafka, t.clean, 4);
    const described = await eventually('the member described', async () => {
      const g = await javaDescribeGroup(group);
      return g.members.length === 1 ? g : undefined;
    });
    expect(described.members[0]).toMatchObject({ instanceId: 'veil-protect-7d9f-abcde', partitions: 2 });

    await first.stop();
    await start({ VEIL_KAFKA_GROUP_INSTANCE_ID: 'veil-protect-7d9f-abcde' });
    await produce(kafka, t.raw, [5, 6, 7, 8].map(record));
    const clean = await consume(kafka, t.clean, 8);
    expect(clean.map((r) => (JSON.parse(String(r.value)) as { id: number }).id).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const after = await javaDescribeGroup(group);
    expect(after.members.map((m) => m.instanceId)).toEqual(['veil-protect-7d9f-abcde']);

    await expect(
      openStream({
        configFile,
        dataDir,
        env: { ...STREAM_MASTER, VEIL_KAFKA_GROUP_INSTANCE_ID: 'x' },
        now: () => new Date(),
        brokers: BROKERS,
        development: true,
        client: 'kafkajs',
      }),
    ).rejects.toThrow(/needs the librdkafka client/);
    await expect(
      openStream({
        configFile,
        dataDir,
        env: { ...STREAM_MASTER, VEIL_KAFKA_GROUP_INSTANCE_ID: 'pod name/with space' },
        now: () => new Date(),
        brokers: BROKERS,
        development: true,
      }),
    ).rejects.toThrow(/VEIL_KAFKA_GROUP_INSTANCE_ID must be/);
  }, 180_000);
});
