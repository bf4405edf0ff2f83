import type { Server } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { VeilError } from '../engine/index.ts';
import { registerOpsRoutes } from '../http/routes/ops-routes.ts';
import { openKafkaPort, streamClient } from '../stream/kafka-client.ts';
import type { KafkaPort, SchemaRegistryPort } from '../stream/ports.ts';
import { ProtectPipeline } from '../stream/protect-pipeline.ts';
import { killingInCommit } from '../stream/fault-injection.ts';
import { jsonSerde } from '../stream/serde/json-serde.ts';
import type { Serde } from '../stream/serde/serde.ts';
import { StreamMetrics } from '../stream/stream-metrics.ts';
import { createLogger } from './logger.ts';
import { openEngine } from './open-engine.ts';

export interface StreamOptions {
  configFile: string;
  dataDir: string;
  env: Readonly<Record<string, string | undefined>>;
  now: () => Date;
  brokers: string[];
  registryUrl?: string;
  /** only these pipelines (default: all) */
  pipelines?: string[];
  development: boolean;
  logger?: Logger;
  notice?: (line: string) => void;
  /** the Kafka client (librdkafka | kafkajs; default librdkafka) */
  client?: string;
  /** a KafkaPort to use instead of the client's (tests) */
  kafka?: KafkaPort;
}

export interface StreamService {
  pipelines: ProtectPipeline[];
  metrics: StreamMetrics;
  logger: Logger;
  start(): Promise<void>;
  /** Stops the pipelines, then closes the Kafka client and the operations server. */
  stop(): Promise<void>;
  /** the operations routes of the HTTP service on a port: /healthz (pipeline progress), /readyz, /metrics */
  listen(port: number, host: string): Promise<Server>;
}

/** Wires config, keystore, engine, Kafka and the registry into the protect pipelines. */
export async function openStream(options: StreamOptions): Promise<StreamService> {
  const logger = options.logger ?? createLogger(options.env.VEIL_LOG_LEVEL ?? 'info');
  const { config, engine } = await openEngine({ configFile: options.configFile, dataDir: options.dataDir, env: options.env, now: options.now, provision: options.development, notice: options.notice });
  const names = options.pipelines ?? Object.keys(config.pipelines);
  for (const n of names) if (!config.pipelines[n]) throw new VeilError('CONFIG_INVALID', `no pipeline ${n} in ${options.configFile}`);
  if (names.length === 0) throw new VeilError('CONFIG_INVALID', `${options.configFile} defines no pipelines`);

  const client = options.kafka ?? await openKafkaPort(streamClient(options.client ?? options.env.VEIL_STREAM_CLIENT), {
    brokers: options.brokers,
    clientId: 'veil-stream',
    sessionTimeoutMs: Number(options.env.VEIL_KAFKA_SESSION_TIMEOUT_MS ?? 30_000),
    log: (level, message, extra) => logger[level]({ kafka: extra }, message),
  });
  const killInCommit = Number(options.env.VEIL_FAULT_KILL_IN_COMMIT ?? 0);
  const kafka = killInCommit > 0 ? killingInCommit(client, killInCommit) : client;
  let registry: SchemaRegistryPort | undefined;
  // Avro support (registry client, avsc) loads only when a pipeline uses it
  const avroSerdeFor = async (paths: string[]): Promise<Serde> => {
    if (!options.registryUrl) throw new VeilError('CONFIG_INVALID', 'an avro pipeline needs a schema registry: set SCHEMA_REGISTRY_URL or --registry');
    const [{ confluentRegistry }, { CachingRegistry }, { RetryingRegistry }, { avroSerde }] = await Promise.all([
      import('../stream/registry/confluent-registry.ts'), import('../stream/registry/caching-registry.ts'),
      import('../stream/registry/retrying-registry.ts'), import('../stream/serde/avro-serde.ts'),
    ]);
    registry ??= new CachingRegistry(new RetryingRegistry(confluentRegistry(options.registryUrl)));
    return avroSerde({ registry, protectedPaths: paths });
  };
  const metrics = new StreamMetrics();
  const pipelines = await Promise.all(names.map(async (name) => {
    const p = config.pipelines[name]!;
    const serde = p.format === 'json' ? jsonSerde() : await avroSerdeFor(p.fields.map((f) => f.path));
    return new ProtectPipeline({ name, config: p, configVersion: config.version, engine, kafka, serde, metrics, log: logger, stallMs: Number(options.env.VEIL_STREAM_STALL_MS ?? 60_000) });
  }));
  let running = false;
  let ops: FastifyInstance | undefined;
  return {
    pipelines, metrics, logger,
    async start() {
      await Promise.all(pipelines.map((p) => p.start()));
      running = true;
      logger.info({ pipelines: names }, 'pipelines running');
    },
    async stop() {
      running = false;
      await Promise.all(pipelines.map((p) => p.stop()));
      await kafka.disconnect();
      await ops?.close();
    },
    async listen(port, host) {
      ops = Fastify({ logger: false });
      registerOpsRoutes(ops, {
        // liveness is progress: a stalled, halted or crashed pipeline fails it
        live: () => {
          const failing = pipelines.map((p) => ({ pipeline: p.name, ...p.health() })).filter((h) => !h.healthy).map(({ pipeline, reason }) => ({ pipeline, reason }));
          return failing.length ? { healthy: false, detail: { pipelines: failing } } : { healthy: true };
        },
        ready: () => running,
        metrics: metrics.registry,
      });
      await ops.listen({ port, host });
      return ops.server;
    },
  };
}
