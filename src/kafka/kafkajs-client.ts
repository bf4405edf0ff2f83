import { Kafka, logLevel, type KafkaConfig } from 'kafkajs';
import type { KafkaConnection } from './client-settings.ts';
import { kafkajsSecurity } from './kafkajs-security.ts';
import type { KafkaLog } from './ports.ts';

const LEVELS: Record<number, 'error' | 'warn' | 'info'> = { [logLevel.ERROR]: 'error', [logLevel.WARN]: 'warn', [logLevel.INFO]: 'info' };

/**
 * Every kafkajs client veil makes — the adapter's, the topic limits' admin, the compacted-topic
 * logs', the topic sampler's — comes from here, with the connection's brokers and security. `log`
 * gets kafkajs' warnings and errors (their messages name brokers and errors, never credentials);
 * without it the client logs nothing.
 */
export function kafkajsClient(connection: KafkaConnection, clientId: string, options: { log?: KafkaLog; config?: Partial<KafkaConfig> } = {}): Kafka {
  const { log } = options;
  return new Kafka({
    clientId,
    brokers: [...connection.brokers],
    ...kafkajsSecurity(connection),
    logLevel: log ? logLevel.WARN : logLevel.NOTHING,
    ...(log
      ? {
          logCreator:
            () =>
            ({ level, log: entry }) => {
              const { message, ...extra } = entry;
              log(LEVELS[level] ?? 'info', String(message), { error: extra.error, broker: extra.broker, groupId: extra.groupId });
            },
        }
      : {}),
    ...options.config,
  });
}
