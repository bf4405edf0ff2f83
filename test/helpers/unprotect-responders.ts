import { join } from 'node:path';
import type { AuditSink } from '../../src/audit/index.ts';
import { openResponders, type Responders } from '../../src/app/open-responders.ts';
import { openKafkaPort, plainConnection, streamClient, type KafkaPort } from '../../src/kafka/index.ts';
import { UnprotectClient } from '../../src/stream/unprotect/index.ts';
import { BROKERS } from './kafka.ts';
import { MASTER_KEY_HEX } from './http-service.ts';

export interface UnprotectRespondersOptions {
  /** the data dir (its config.yaml) of the HTTP test service the responders share */
  dataDir: string;
  requests: string;
  replies: string;
  audit: AuditSink;
  /** the requester's Kafka client, and its Kafka client id */
  client: string;
  clientId: string;
  /** the responders' VEIL_STREAM_CLIENT (unset: veil's default) */
  respondersClient?: string;
  now?: () => Date;
}

/** Unprotect on demand over Kafka in the test's process: veil's responders, and a requester on its own Kafka port. */
export interface UnprotectResponders {
  port: KafkaPort;
  readonly responders: Responders;
  client: UnprotectClient;
  /** stops the responders and opens them again on the same data dir, as a restarted process would */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Starts veil's responders on the data dir of an HTTP test service, and connects a requester to them. */
export async function startUnprotectResponders(options: UnprotectRespondersOptions): Promise<UnprotectResponders> {
  const streamEnv = options.respondersClient === undefined ? {} : { VEIL_STREAM_CLIENT: options.respondersClient };
  const open = () =>
    openResponders({
      configFile: join(options.dataDir, 'config.yaml'),
      dataDir: options.dataDir,
      env: { VEIL_MASTER_KEY: MASTER_KEY_HEX, VEIL_BASE_URL: 'http://veil.test', VEIL_LOG_LEVEL: 'error', ...streamEnv },
      now: options.now ?? (() => new Date()),
      brokers: BROKERS,
      development: false,
      audit: options.audit,
    });
  const port = await openKafkaPort(streamClient(options.client), { connection: plainConnection(BROKERS), clientId: options.clientId });
  let responders: Responders | undefined;
  let client: UnprotectClient;
  try {
    responders = await open();
    await responders.start();
    client = await UnprotectClient.connect({ kafka: port, requestTopic: options.requests, replyTopic: options.replies });
  } catch (error) {
    await responders?.stop();
    await port.disconnect();
    throw error;
  }
  let running = responders;
  return {
    port,
    client,
    get responders() {
      return running;
    },
    async restart() {
      await running.stop();
      running = await open();
      await running.start();
    },
    async close() {
      await client.close();
      await running.stop();
      await port.disconnect();
    },
  };
}
