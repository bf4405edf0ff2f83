import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { controlTopicSettings, type Accepted } from '../../../src/control/index.ts';
import { KafkaControlLog } from '../../../src/control/kafka-control-log.ts';
import { BROKERS, kafkaClient } from '../../helpers/kafka.ts';
import { privateBroker } from '../../helpers/processes.ts';
import { plainConnection } from '../../../src/kafka/index.ts';

/**
 * The control store's log on the real broker: writers racing on the same head never fork the
 * history, every reader (also one that starts later) resolves it the same way, a losing write is
 * tombstoned, and the topic is one compacted partition.
 */
describe('KafkaControlLog against a real broker', () => {
  const topic = `veil.control.test.${randomBytes(4).toString('hex')}`;
  const opened: KafkaControlLog[] = [];
  const open = async (seen?: Accepted[]) => {
    const log = await KafkaControlLog.open({ connection: plainConnection(BROKERS), topic, onAccepted: (e) => void seen?.push(e) });
    opened.push(log);
    return log;
  };
  afterAll(async () => {
    await Promise.all(opened.map((l) => l.close()));
  });

  it('creates one compacted partition; racing appends on one head: exactly one wins, and all readers agree', async () => {
    const seenA: Accepted[] = [];
    const seenB: Accepted[] = [];
    const a = await open(seenA);
    const b = await open(seenB);
    const admin = kafkaClient().admin();
    await admin.connect();
    const [config] = (await admin.describeConfigs({ resources: [{ type: 2, name: topic, configNames: ['cleanup.policy'] }], includeSynonyms: false }))
      .resources;
    expect(config!.configEntries.find((c) => c.configName === 'cleanup.policy')?.configValue).toBe('compact');
    expect(await admin.fetchTopicOffsets(topic)).toHaveLength(1);

    for (let round = 0; round < 10; round++) {
      const head = a.head('config');
      expect(b.head('config')).toBe(head);
      const results = await Promise.all([a.append('config', head, `text A${round}`), b.append('config', head, `text B${round}`)]);
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(results.find(Boolean)!.number).toBe(head + 1);
      // both readers resolved the same winner
      expect(a.state.configs.at(-1)!.write.body).toBe(b.state.configs.at(-1)!.write.body);
    }
    expect(a.head('config')).toBe(10);
    expect(seenA.map((e) => e.write.body)).toEqual(seenB.map((e) => e.write.body));

    // a keyset write based on an old head loses; one on the current head wins
    expect(await a.append('keyset', 0, 'doc 1')).toMatchObject({ number: 1 });
    expect(await b.append('keyset', 0, 'doc 1 too')).toBeUndefined();
    expect(await b.append('keyset', 1, 'doc 2')).toMatchObject({ number: 2 });

    // a process that starts now reads the same history from the topic alone
    const seenC: Accepted[] = [];
    const c = await open(seenC);
    expect(seenC.map((e) => `${e.history}/${e.number}:${e.write.body}`)).toEqual(seenA.map((e) => `${e.history}/${e.number}:${e.write.body}`));
    expect(c.head('keyset')).toBe(2);
    expect(c.state.keyset!.write.body).toBe('doc 2');

    // each losing write was tombstoned after it lost
    const consumer = kafkaClient().consumer({ groupId: `verify-${randomBytes(4).toString('hex')}` });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const records: { key: string; value: Buffer | null }[] = [];
    const high = Number((await admin.fetchTopicOffsets(topic))[0]!.high);
    await new Promise<void>(
      (resolve) =>
        void consumer.run({
          eachMessage: async ({ message }) => {
            records.push({ key: message.key!.toString(), value: message.value });
            if (Number(message.offset) >= high - 1) resolve();
          },
        }),
    );
    await consumer.disconnect();
    await admin.disconnect();
    const tombstones = new Set(records.filter((r) => r.value === null).map((r) => r.key));
    const writes = records.filter((r) => r.value !== null);
    expect(writes).toHaveLength(23);
    expect(tombstones.size).toBe(11);
    for (const key of tombstones) expect(writes.some((w) => w.key === key)).toBe(true);
  }, 120_000);

  it('a mirror that fails is retried on the record delivered again, and the write is applied once', async () => {
    const failOnce = `veil.control.test.${randomBytes(4).toString('hex')}`;
    const calls: number[] = [];
    const log = await KafkaControlLog.open({
      connection: plainConnection(BROKERS),
      topic: failOnce,
      onAccepted: (e) => {
        calls.push(e.number);
        if (calls.length === 1) throw new Error('disk full, once');
      },
    });
    opened.push(log);
    expect(await log.append('config', 0, 'first')).toMatchObject({ number: 1 });
    expect(await log.append('config', 1, 'second')).toMatchObject({ number: 2 });
    expect(calls).toEqual([1, 1, 2]);
    expect(log.head('config')).toBe(2);
  }, 120_000);

  it('an append the brokers do not take is CONTROL_STORE_UNAVAILABLE, naming no value; the history is unchanged', async () => {
    const broker = await privateBroker('control-down');
    try {
      const log = await KafkaControlLog.open({ connection: plainConnection([broker.brokers]), topic: 'veil.control.down', appendTimeoutMs: 5_000 });
      opened.push(log);
      expect((await log.append('config', 0, 'version one'))!.number).toBe(1);
      expect(log.status()).toEqual({ following: true });
      await broker.stop();
      const error = await log.append('config', 1, 'secret-looking text').then(
        () => undefined,
        (e: unknown) => e as { code: string; message: string },
      );
      expect(error).toMatchObject({ code: 'CONTROL_STORE_UNAVAILABLE' });
      expect(error!.message).not.toContain('secret-looking');
      expect(log.head('config')).toBe(1);
    } finally {
      await broker.stop().catch(() => undefined);
    }
  }, 120_000);

  it('VEIL_CONTROL_REPLICATION_FACTOR / VEIL_CONTROL_MIN_INSYNC_REPLICAS: used when veil creates the topic; an existing topic with less, or not compacted, is warned about', async () => {
    const admin = kafkaClient().admin();
    await admin.connect();
    try {
      const isrOf = async (name: string) =>
        (await admin.describeConfigs({ resources: [{ type: 2, name, configNames: ['min.insync.replicas'] }], includeSynonyms: false })).resources[0]!
          .configEntries[0]!.configValue;
      const created = `veil.control.settings.${randomBytes(4).toString('hex')}`;
      const warnings: string[] = [];
      const log = await KafkaControlLog.open({
        ...controlTopicSettings({ VEIL_CONTROL_REPLICATION_FACTOR: '1', VEIL_CONTROL_MIN_INSYNC_REPLICAS: '1' }),
        connection: plainConnection(BROKERS),
        topic: created,
        warn: (m) => warnings.push(m),
      });
      opened.push(log);
      expect([await isrOf(created), warnings]).toEqual(['1', []]);
      // made by someone else, with the broker's defaults and retention by age; veil asked for 3 replicas, 2 in sync
      const existing = `veil.control.existing.${randomBytes(4).toString('hex')}`;
      await admin.createTopics({
        waitForLeaders: true,
        topics: [{ topic: existing, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'delete' }] }],
      });
      const other = await KafkaControlLog.open({
        ...controlTopicSettings({ VEIL_CONTROL_REPLICATION_FACTOR: '3', VEIL_CONTROL_MIN_INSYNC_REPLICAS: '2' }),
        connection: plainConnection(BROKERS),
        topic: existing,
        warn: (m) => warnings.push(m),
      });
      opened.push(other);
      expect(warnings).toEqual([
        expect.stringMatching(/has 1 replica\(s\), fewer than VEIL_CONTROL_REPLICATION_FACTOR=3/),
        expect.stringMatching(/min.insync.replicas=1, fewer than VEIL_CONTROL_MIN_INSYNC_REPLICAS=2/),
        expect.stringMatching(/cleanup.policy=delete, not compact/),
      ]);
    } finally {
      await admin.disconnect();
    }
  });

  it.each([
    ['0', undefined],
    ['x', undefined],
    ['2', '3'],
  ])('refuses VEIL_CONTROL_REPLICATION_FACTOR=%s with VEIL_CONTROL_MIN_INSYNC_REPLICAS=%s', (rf, isr) => {
    expect(() => controlTopicSettings({ VEIL_CONTROL_REPLICATION_FACTOR: rf, ...(isr ? { VEIL_CONTROL_MIN_INSYNC_REPLICAS: isr } : {}) })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
  });
});
