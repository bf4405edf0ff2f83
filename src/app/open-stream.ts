import type { Server } from 'node:http';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { VeilError } from '../engine/index.ts';
import { registerOpsRoutes } from '../http/routes/ops-routes.ts';
import { openKafkaPort, streamClient } from '../stream/kafka-client.ts';
import type { KafkaPort } from '../stream/ports.ts';
import { ProtectPool } from '../stream/protect-pool.ts';
import { serdes } from './pipeline-serde.ts';
import type { ProtectWorkerData } from './protect-worker.ts';
import { ProtectPipeline } from '../stream/protect-pipeline.ts';
import { killingInCommit } from '../stream/fault-injection.ts';
import { StreamMetrics } from '../stream/stream-metrics.ts';
import { createLogger } from './logger.ts';
import { openControlStore } from './control-store.ts';
import { leaseLiveness, openEngine } from './open-engine.ts';

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

const PROTECT_WORKER = new URL('./protect-worker.ts', import.meta.url);

/**
 * Protection threads per pipeline: VEIL_PROTECT_THREADS, else one fewer than the cores (at least
 * one, at most 4); 0 protects on the consumer's thread.
 */
export function protectThreads(given: string | undefined): number {
  if (given === undefined || given === '') return Math.min(4, Math.max(1, availableParallelism() - 1));
  const n = Number(given);
  if (!Number.isInteger(n) || n < 0 || n > 64) throw new VeilError('CONFIG_INVALID', 'VEIL_PROTECT_THREADS must be an integer from 0 to 64');
  return n;
}

/** Wires config, keystore, engine, Kafka and the registry into the protect pipelines. */
export async function openStream(options: StreamOptions): Promise<StreamService> {
  const logger = options.logger ?? createLogger(options.env.VEIL_LOG_LEVEL ?? 'info');
  // keys from the shared control store when there is one (the data dir is its mirror)
  const control = await openControlStore(options.env, options.dataDir);
  const { config, engine, lease } = await openEngine({ configFile: options.configFile, dataDir: options.dataDir, env: options.env, now: options.now, provision: options.development, notice: options.notice, ...(control ? { control } : {}) }).catch(async (e: unknown) => {
    // a process that does not start leaves the control store's consumer behind otherwise
    await control?.close();
    throw e;
  });
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
  const metrics = new StreamMetrics();
  const serdeOf = serdes(options.registryUrl);
  const threads = protectThreads(options.env.VEIL_PROTECT_THREADS);
  const pools: ProtectPool[] = [];
  const pipelines = await Promise.all(names.map(async (name) => {
    const p = config.pipelines[name]!;
    const serde = await serdeOf(p);
    let protector: ProtectPool | undefined;
    if (threads > 0) {
      const workerData: ProtectWorkerData = { configFile: options.configFile, dataDir: options.dataDir, env: { ...options.env }, pipeline: name, ...(options.registryUrl ? { registryUrl: options.registryUrl } : {}) };
      protector = new ProtectPool(threads, () => new Worker(PROTECT_WORKER, { workerData }));
      pools.push(protector);
    }
    return new ProtectPipeline({ name, config: p, configVersion: config.version, engine, kafka, serde, metrics, log: logger, stallMs: Number(options.env.VEIL_STREAM_STALL_MS ?? 60_000), ...(protector ? { protector } : {}) });
  }));
  try {
    await Promise.all(pools.map((p) => p.ready()));
  } catch (e) {
    await Promise.all(pools.map((p) => p.close()));
    throw e;
  }
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
      await Promise.all(pools.map((p) => p.close()));
      await kafka.disconnect();
      await ops?.close();
      lease?.stop();
      await control?.close();
    },
    async listen(port, host) {
      ops = Fastify({ logger: false });
      registerOpsRoutes(ops, {
        // liveness is progress: a stalled, halted or crashed pipeline fails it
        live: () => {
          const failing = pipelines.map((p) => ({ pipeline: p.name, ...p.health() })).filter((h) => !h.healthy).map(({ pipeline, reason }) => ({ pipeline, reason }));
          const kek = leaseLiveness(lease);
          if (!failing.length && kek.healthy) return { healthy: true };
          return { healthy: false, detail: { ...(failing.length ? { pipelines: failing } : {}), ...kek.detail } };
        },
        ready: () => running,
        metrics: metrics.registry,
      });
      await ops.listen({ port, host });
      return ops.server;
    },
  };
}
