import type { Admin, Kafka } from 'kafkajs';
import type { KafkaConnection } from './client-settings.ts';
import { kafkajsClient } from './kafkajs-client.ts';
import { KafkaError } from './kafka-error.ts';
import { kafkajsCall } from './kafkajs-errors.ts';

/** kafkajs' ConfigResourceTypes.TOPIC (not a named ESM export of the CommonJS package) */
const TOPIC_RESOURCE = 2;

export interface TopicLimits {
  /** a topic's effective max.message.bytes, cached; rejects with a retriable KafkaError when unreadable */
  maxMessageBytes(topic: string): Promise<number>;
  /** forgets a topic's limit (the broker refused a batch: the limit may have changed) */
  forget(topic: string): void;
  close(): Promise<void>;
}

/** The kafkajs adapter's topic limits: also the connected admin client, shared with its stable offset reads. */
export interface KafkajsTopicLimits extends TopicLimits {
  admin(): Promise<Admin>;
}

/**
 * Topic limits for the librdkafka adapter, on an admin client of their own: a kafkajs client
 * that logs nothing, kept inside this file so that no kafkajs type reaches that adapter.
 */
export function describeConfigsLimits(options: { clientId: string; connection: KafkaConnection }): TopicLimits {
  return topicLimits(kafkajsClient(options.connection, options.clientId));
}

/**
 * Topic limits read with DescribeConfigs through a kafkajs admin client. Both adapters use it:
 * the librdkafka binding (@confluentinc/kafka-javascript) has no DescribeConfigs.
 */
export function topicLimits(kafka: Kafka): KafkajsTopicLimits {
  let admin: Promise<Admin> | undefined;
  const connectedAdmin = () =>
    (admin ??= (async () => {
      const a = kafka.admin();
      await a.connect();
      return a;
    })().catch((e: unknown) => {
      admin = undefined;
      throw e;
    }));
  const limits = new Map<string, Promise<number>>();
  return {
    maxMessageBytes(topic) {
      let limit = limits.get(topic);
      if (!limit) {
        limit = (async () => {
          const { resources } = await kafkajsCall('describe configs', async () =>
            (await connectedAdmin()).describeConfigs({
              includeSynonyms: false,
              resources: [{ type: TOPIC_RESOURCE, name: topic, configNames: ['max.message.bytes'] }],
            }),
          );
          const value = Number(resources[0]?.configEntries.find((c) => c.configName === 'max.message.bytes')?.configValue);
          if (!Number.isFinite(value) || value <= 0) throw new KafkaError('TOPIC_CONFIG_UNREADABLE', `topic ${topic}: max.message.bytes unknown`, true);
          return value;
        })();
        limits.set(topic, limit);
        limit.catch(() => limits.delete(topic));
      }
      return limit;
    },
    forget: (topic) => void limits.delete(topic),
    admin: connectedAdmin,
    async close() {
      const a = admin;
      admin = undefined;
      if (a) await (await a).disconnect().catch(() => undefined);
    },
  };
}
