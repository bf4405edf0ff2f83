import { randomUUID } from 'node:crypto';
import type { KafkaConnection } from './client-settings.ts';
import { reportDenied } from './denied.ts';
import { kafkajsClient } from './kafkajs-client.ts';
import { fromKafkajs } from './kafkajs-errors.ts';
import { KafkaError } from './kafka-error.ts';

/** One sampled record as it is on the topic: the caller decodes it. */
export interface TopicSample {
  key: Buffer | null;
  value: Buffer | null;
}

/**
 * Up to `limit` committed records of a topic, from the beginning of each partition, handed to
 * `each` one at a time (awaited: a decoder may fetch a schema), by a consumer of a throwaway
 * group that commits nothing and is deleted afterwards — what `veil discover --topic` reads. Stops
 * at `limit`, at the records the topic held when it started, or after `timeoutMs`. Refuses a topic
 * that does not exist (TOPIC_NOT_FOUND) and brokers it cannot reach (BROKERS_UNREACHABLE).
 */
export async function sampleTopic(
  connection: KafkaConnection,
  topic: string,
  limit: number,
  each: (record: TopicSample) => Promise<void>,
  timeoutMs = 15_000,
): Promise<number> {
  const kafka = kafkajsClient(connection, 'veil-discover');
  const admin = kafka.admin();
  try {
    await admin.connect();
  } catch (e) {
    const error = reportDenied(fromKafkajs(e, `brokers ${connection.brokers.join(',')}`));
    if (error instanceof KafkaError && error.denied) throw error;
    throw new KafkaError('BROKERS_UNREACHABLE', `cannot reach the Kafka brokers ${connection.brokers.join(',')}`, true, { cause: e });
  }
  const groupId = `veil-discover-${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, readUncommitted: false });
  let read = 0;
  try {
    if (!(await admin.listTopics()).includes(topic)) throw new KafkaError('TOPIC_NOT_FOUND', `topic ${topic} does not exist`, false);
    const offsets = await admin.fetchTopicOffsets(topic);
    const want = Math.min(
      limit,
      offsets.reduce((n, p) => n + Math.max(0, Number(p.high) - Number(p.low)), 0),
    );
    if (want === 0) return 0;
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, timeoutMs);
      consumer.on(consumer.events.CRASH, (e) => reject(e.payload.error));
      void consumer.run({
        autoCommit: false,
        eachMessage: async ({ message }) => {
          if (read >= want) return;
          read++;
          await each({ key: message.key, value: message.value });
          if (read >= want) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
  } catch (e) {
    throw reportDenied(fromKafkajs(e, `topic ${topic}`));
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  }
  return read;
}
