import type { Env } from '../../env/index.ts';
import type { KafkaLog, KafkaPort } from './ports.ts';

/** The Kafka clients veil's stream processors run on (docs/kafka-clients.md says why librdkafka is the default). */
export const STREAM_CLIENTS = ['librdkafka', 'kafkajs'] as const;
export type StreamClient = (typeof STREAM_CLIENTS)[number];
export const DEFAULT_STREAM_CLIENT: StreamClient = 'librdkafka';

export interface KafkaPortOptions {
  brokers: string[];
  clientId: string;
  sessionTimeoutMs?: number;
  /**
   * static group membership (KIP-345): the consumers' group.instance.id, e.g. the pod's name, so
   * a member restarted within the session timeout gets its partitions back without a rebalance
   * of the group. librdkafka only: kafkajs has no static membership (refused at start).
   */
  groupInstanceId?: string;
  log?: KafkaLog;
}

/**
 * VEIL_KAFKA_GROUP_INSTANCE_ID as a group.instance.id: unset or empty, none (dynamic membership);
 * otherwise 1 to 249 of A-Z a-z 0-9 . _ - (what Kafka accepts of an id), else refused.
 */
export function groupInstanceId(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/^[A-Za-z0-9._-]{1,249}$/.test(value)) throw new RangeError('VEIL_KAFKA_GROUP_INSTANCE_ID must be 1 to 249 of A-Z a-z 0-9 . _ - (a pod name is)');
  return value;
}

/** The KafkaPort options of static membership from the environment (none when VEIL_KAFKA_GROUP_INSTANCE_ID is unset). */
export function staticMembership(env: Env): { groupInstanceId?: string } {
  const id = groupInstanceId(env.VEIL_KAFKA_GROUP_INSTANCE_ID);
  return id ? { groupInstanceId: id } : {};
}

/** The client named by `--client`, else VEIL_STREAM_CLIENT, else the default; anything else is refused. */
export function streamClient(given: string | undefined): StreamClient {
  const name = given ?? DEFAULT_STREAM_CLIENT;
  if (!(STREAM_CLIENTS as readonly string[]).includes(name)) throw new RangeError(`unknown Kafka client ${JSON.stringify(name)}: use ${STREAM_CLIENTS.join(' or ')}`);
  return name as StreamClient;
}

/** A KafkaPort on the chosen client; each adapter loads only when chosen (librdkafka is a native addon). */
export async function openKafkaPort(client: StreamClient, options: KafkaPortOptions): Promise<KafkaPort> {
  if (client === 'kafkajs') {
    if (options.groupInstanceId !== undefined) throw new RangeError('static group membership (VEIL_KAFKA_GROUP_INSTANCE_ID) needs the librdkafka client: kafkajs has none');
    const { kafkajsPort } = await import('./kafkajs-adapter.ts');
    return kafkajsPort(options);
  }
  const { librdkafkaPort } = await import('./librdkafka-adapter.ts');
  return librdkafkaPort(options);
}
