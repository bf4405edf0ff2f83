import type { KafkaPort } from './ports.ts';

/** The Kafka clients veil's stream processors run on (docs/kafka-clients.md says why librdkafka is the default). */
export const STREAM_CLIENTS = ['librdkafka', 'kafkajs'] as const;
export type StreamClient = (typeof STREAM_CLIENTS)[number];
export const DEFAULT_STREAM_CLIENT: StreamClient = 'librdkafka';

export interface KafkaPortOptions {
  brokers: string[];
  clientId: string;
  sessionTimeoutMs?: number;
  log?: (level: 'error' | 'warn' | 'info', message: string, extra: Record<string, unknown>) => void;
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
    const { kafkajsPort } = await import('./kafkajs-adapter.ts');
    return kafkajsPort(options);
  }
  const { librdkafkaPort } = await import('./librdkafka-adapter.ts');
  return librdkafkaPort(options);
}
