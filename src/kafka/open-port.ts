import type { KafkaConnection } from './client-settings.ts';
import { reportingDenied } from './denied-port.ts';
import type { KafkaLog, KafkaPort } from './ports.ts';

/** The Kafka clients veil's stream processors run on (docs/kafka-clients.md says why librdkafka is the default). */
export const STREAM_CLIENTS = ['librdkafka', 'kafkajs'] as const;
export type StreamClient = (typeof STREAM_CLIENTS)[number];
export const DEFAULT_STREAM_CLIENT: StreamClient = 'librdkafka';

export interface KafkaPortOptions {
  /** the cluster and its security (client-settings.ts); its group.instance.id is the consumers' static membership (librdkafka only) */
  connection: KafkaConnection;
  clientId: string;
  /** the consumers' session timeout, over the connection's session.timeout.ms (default 30 s) */
  sessionTimeoutMs?: number;
  log?: KafkaLog;
}

/**
 * group.instance.id (VEIL_KAFKA_GROUP_INSTANCE_ID, static group membership): unset or empty, none
 * (dynamic membership); otherwise 1 to 249 of A-Z a-z 0-9 . _ - (what Kafka accepts of an id), else refused.
 */
export function groupInstanceId(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/^[A-Za-z0-9._-]{1,249}$/.test(value)) throw new RangeError('group.instance.id must be 1 to 249 of A-Z a-z 0-9 . _ - (a pod name is)');
  return value;
}

/** The client named by `--client`, else VEIL_STREAM_CLIENT, else the default; anything else is refused. */
export function streamClient(given: string | undefined): StreamClient {
  const name = given ?? DEFAULT_STREAM_CLIENT;
  if (!(STREAM_CLIENTS as readonly string[]).includes(name))
    throw new RangeError(`unknown Kafka client ${JSON.stringify(name)}: use ${STREAM_CLIENTS.join(' or ')}`);
  return name as StreamClient;
}

/**
 * A KafkaPort on the chosen client; each adapter loads only when chosen (librdkafka is a native
 * addon). Every refusal a call meets is reported to the process's listeners (denied-port.ts).
 */
export async function openKafkaPort(client: StreamClient, options: KafkaPortOptions): Promise<KafkaPort> {
  const { connection } = options;
  const sessionTimeoutMs = options.sessionTimeoutMs ?? connection.sessionTimeoutMs ?? 30_000;
  let port: KafkaPort;
  if (client === 'kafkajs') {
    if (connection.groupInstanceId !== undefined)
      throw new RangeError('static group membership (group.instance.id, VEIL_KAFKA_GROUP_INSTANCE_ID) needs the librdkafka client: kafkajs has none');
    const { kafkajsPort } = await import('./kafkajs-adapter.ts');
    port = kafkajsPort({ connection, clientId: options.clientId, sessionTimeoutMs, ...(options.log ? { log: options.log } : {}) });
  } else {
    const { librdkafkaPort } = await import('./librdkafka-adapter.ts');
    port = librdkafkaPort({ connection, clientId: options.clientId, sessionTimeoutMs, ...(options.log ? { log: options.log } : {}) });
  }
  return reportingDenied(port);
}
