import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin } from 'kafkajs';
import { openCompactedTopic, plainConnection } from '../../../src/kafka/index.ts';
import { BROKERS, kafkaClient } from '../../helpers/kafka.ts';

/**
 * Opening a compacted topic veil creates (veil.control, veil.subjects) on a broker that is busy
 * creating other partitions: for a while the broker answers UNKNOWN_TOPIC_OR_PARTITION about the
 * new topic, and kafkajs's own wait for leaders gave up at that answer, so a process started beside
 * a deployment creating topics failed to start. The open waits until the topic is led instead.
 */
describe('openCompactedTopic on a busy broker', () => {
  const run = randomBytes(4).toString('hex');
  let admin: Admin;
  beforeAll(async () => {
    admin = kafkaClient().admin();
    await admin.connect();
  });
  const busyTopics: string[] = [];
  afterAll(async () => {
    // 200 partitions each: not left for the rest of the suite's broker
    await admin.deleteTopics({ topics: busyTopics }).catch(() => undefined);
    await admin.disconnect();
  });

  it('creates and opens its topic while the broker creates a topic of 200 partitions, twice of twice', async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < 2; round++) {
      busyTopics.push(`veil.test.busy.${run}.${round}`);
      const busy = admin.createTopics({ topics: [{ topic: busyTopics.at(-1)!, numPartitions: 200 }], waitForLeaders: false });
      const name = `veil.test.compacted.${run}.${round}`;
      try {
        const { topic, ends } = await openCompactedTopic({ connection: plainConnection(BROKERS), clientId: 'veil-test', topic: name });
        outcomes.push(`opened, ${ends.size} partition(s), created: ${topic.created}`);
        await topic.close();
      } catch (e) {
        outcomes.push(`failed: ${(e as { code?: string }).code ?? (e as Error).name}`);
      }
      await busy;
    }
    expect(outcomes).toEqual(Array.from({ length: 2 }, () => 'opened, 1 partition(s), created: true'));
  });
});
