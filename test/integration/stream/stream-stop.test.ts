import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTopics, javaConsumeCommitted, kafkaClient, steadyProducer, topicsFor } from '../../helpers/kafka.ts';
import { sigtermAndWait, spawnStream, waitFor } from '../../helpers/processes.ts';
import { pipelineYaml, STREAM_MASTER } from '../../helpers/stream.ts';
import { streamClients } from '../../helpers/stream-clients.ts';

/**
 * An orchestrator's rolling restart of `veil stream protect`: SIGTERM while records keep arriving.
 * The process finishes or aborts its batches, leaves the group and exits 0 well within its stop
 * timeout; a second process picks up where it stopped, and Kafka's Java read_committed client finds
 * every record once.
 */
describe.each(streamClients())('veil stream protect on %s stops when asked', (client) => {
  const kafka = kafkaClient(`stop-${client}`);
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('exits 0 within seconds of SIGTERM under load; the next process goes on exactly-once', async () => {
    const t = topicsFor(`stop-${client}`);
    await createTopics(kafka, [t.raw, t.clean], 2);
    await createTopics(kafka, [t.dlq], 1);
    const dataDir = await mkdtemp(join(tmpdir(), 'veil-stream-stop-'));
    dirs.push(dataDir);
    const configFile = join(dataDir, 'config.yaml');
    await writeFile(configFile, pipelineYaml(t, 'json'));
    const env = {
      ...STREAM_MASTER,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:19092',
      VEIL_STREAM_CLIENT: client,
      VEIL_STOP_TIMEOUT_MS: '20000',
      VEIL_KAFKA_SESSION_TIMEOUT_MS: '6000',
    };
    const args = ['--config', configFile, '--data-dir', dataDir, '--port', '0'];
    const first = spawnStream(args, env);
    const producer = await steadyProducer(kafka);
    const admin = kafka.admin();
    await admin.connect();
    let sent = 0;
    let producing = true;
    const feeding = (async () => {
      while (producing) {
        const batch = Array.from({ length: 100 }, (_, i) => {
          const id = sent + i;
          const email = `user${id % 53}@example.com`;
          return { key: email, value: JSON.stringify({ id, email, cards: [{ number: '4111111111111111' }], profile: { name: `Name ${id}` } }) };
        });
        await producer.send(t.raw, batch);
        sent += batch.length;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      await waitFor(
        async () => (await admin.fetchTopicOffsets(t.clean).catch(() => [])).reduce((n, p) => n + Number(p.high), 0) > 1500,
        60_000,
        'records in the clean topic',
      );
      const { code, tookMs: took } = await sigtermAndWait(first, 25_000);
      expect({ code, late: first.output().includes('did not stop within') }, first.output().split('\n').slice(-8).join('\n')).toEqual({ code: 0, late: false });
      expect(took).toBeLessThan(15_000);
      producing = false;
      await feeding;
      // the next process takes over and finishes
      const second = spawnStream(args, env);
      try {
        let java: { value: string }[] = [];
        await waitFor(async () => (java = await javaConsumeCommitted(t.clean)).length >= sent, 120_000, 'every record in the clean topic');
        const ids = java.map((r) => (JSON.parse(r.value) as { id: number }).id);
        expect({ records: ids.length, unique: new Set(ids).size }).toEqual({ records: sent, unique: sent });
      } finally {
        second.kill('SIGKILL');
      }
    } finally {
      producing = false;
      await feeding.catch(() => undefined);
      await producer.close();
      await admin.disconnect();
      if (first.exitCode === null) first.kill('SIGKILL');
    }
  }, 240_000);
});
