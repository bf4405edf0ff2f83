import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { openCompactedTopic, plainConnection } from '../../../src/kafka/index.ts';
import { privateBroker } from '../../helpers/processes.ts';

/**
 * Opening a compacted topic veil creates (veil.control, veil.subjects) on a broker that is busy
 * creating other partitions: for a while the broker answers UNKNOWN_TOPIC_OR_PARTITION about the
 * new topic, and kafkajs's own wait for leaders gave up at that answer, so a process started beside
 * a deployment creating topics failed to start. The open waits until the topic is led instead
 * (src/kafka/kafkajs-compacted-topic.ts: create).
 *
 * On a broker of its own: 400 partitions created, then deleted (the broker removes their files a
 * minute later), kept a broker other test files time their runs on busy (issue 42's note: the
 * control-store test of a publish reaching running processes missed its 10 s after it).
 */
describe('openCompactedTopic on a busy broker', () => {
  const run = randomBytes(4).toString('hex');
  let broker: Awaited<ReturnType<typeof privateBroker>>;
  let admin: Admin;
  beforeAll(async () => {
    broker = await privateBroker('compacted-open');
    admin = new Kafka({ clientId: 'veil-test', brokers: [broker.brokers], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
  }, 180_000);
  afterAll(async () => {
    await admin?.disconnect();
    await broker?.stop();
  }, 180_000);

  it('creates and opens its topic while the broker creates a topic of 200 partitions, twice of twice', async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < 2; round++) {
      const busy = admin.createTopics({ topics: [{ topic: `veil.test.busy.${run}.${round}`, numPartitions: 200 }], waitForLeaders: false });
      const name = `veil.test.compacted.${run}.${round}`;
      try {
        const { topic, ends } = await openCompactedTopic({ connection: plainConnection([broker.brokers]), clientId: 'veil-test', topic: name });
        outcomes.push(`opened, ${ends.size} partition(s), created: ${topic.created}`);
        await topic.close();
      } catch (e) {
        outcomes.push(`failed: ${(e as { code?: string }).code ?? (e as Error).name}`);
      }
      await busy;
    }
    expect(outcomes).toEqual(Array.from({ length: 2 }, () => 'opened, 1 partition(s), created: true'));
  }, 120_000);
});
