import type { Admin, Kafka } from 'kafkajs';
import { KafkaPortError } from './ports.ts';

/** kafkajs' ConfigResourceTypes.TOPIC (not a named ESM export of the CommonJS package) */
const TOPIC_RESOURCE = 2;

export interface TopicLimits {
  /** a topic's effective max.message.bytes, cached; rejects with KafkaPortError when unreadable */
  maxMessageBytes(topic: string): Promise<number>;
  /** forgets a topic's limit (the broker refused a batch: the limit may have changed) */
  forget(topic: string): void;
  /** the connected admin client, shared with the kafkajs adapter's stable offset reads */
  admin(): Promise<Admin>;
  close(): Promise<void>;
}

/**
 * Topic limits read with DescribeConfigs through a kafkajs admin client. Both adapters use it:
 * the librdkafka binding (@confluentinc/kafka-javascript) has no DescribeConfigs.
 */
export function topicLimits(kafka: Kafka): TopicLimits {
  let admin: Promise<Admin> | undefined;
  const connectedAdmin = () => (admin ??= (async () => {
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
          const { resources } = await (await connectedAdmin()).describeConfigs({ includeSynonyms: false, resources: [{ type: TOPIC_RESOURCE, name: topic, configNames: ['max.message.bytes'] }] });
          const value = Number(resources[0]?.configEntries.find((c) => c.configName === 'max.message.bytes')?.configValue);
          if (!Number.isFinite(value) || value <= 0) throw new KafkaPortError('TOPIC_CONFIG_UNREADABLE', `topic ${topic}: max.message.bytes unknown`);
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
