import type { Server } from 'node:http';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { VeilError } from '../engine/index.ts';
import { registerOpsRoutes } from '../http/routes/ops-routes.ts';
import { DEFAULT_BROKERS, kafkaConnection, openKafkaPort, streamClient } from '../kafka/index.ts';
import type { KafkaPort } from '../kafka/index.ts';
import { ProtectPool } from '../stream/protect/index.ts';
import { lazySubjectKeyStore, subjectStoreSettings } from '../subjects/index.ts';
import { serdes } from '../stream/protect/index.ts';
import type { ProtectWorkerData } from './protect-thread.ts';
import { ProtectPipeline } from '../stream/protect/index.ts';
import type { PipelineConfig } from '../stream/config/index.ts';
import { rewrapPipeline, type RewrapSpec } from '../stream/protect/index.ts';
import type { VeilConfig } from './config-file.ts';
import { killingInCommit } from '../kafka/index.ts';
import { StreamMetrics } from '../stream/protect/index.ts';
import { createLogger } from './logger.ts';
import { openActiveEngine } from './open-active-engine.ts';
import { logKekTransitions } from '../keystore/key-lease.ts';
import { openTracing } from '../observability/tracing.ts';
import { registrySettings } from '../stream/registry/index.ts';

export interface StreamOptions {
  configFile: string;
  dataDir: string;
  env: Readonly<Record<string, string | undefined>>;
  now: () => Date;
  /** the brokers named on the command line (--brokers), over KAFKA_BROKERS and bootstrap.servers; the security comes from VEIL_KAFKA_* (src/kafka/client-settings.ts) */
  brokers?: string[];
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
  /** veil stream rewrap: the one pipeline named re-protects its clean topic into a new one */
  rewrap?: RewrapSpec;
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

const PROTECT_WORKER = new URL('./protect-thread.ts', import.meta.url);

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

/**
 * Wires config, keystore, engine, Kafka and the registry into the protect pipelines. Like `veil
 * serve`, the process runs the active configuration version (its file adopted when it changed)
 * and follows the data dir or the shared control store: a version published elsewhere is bound
 * from the next batch on (ProtectPipeline.follow), a key rotated elsewhere is used as soon as it
 * is mirrored here.
 */
export async function openStream(options: StreamOptions): Promise<StreamService> {
  const logger = options.logger ?? createLogger(options.env.VEIL_LOG_LEVEL ?? 'info');
  // the cluster and its security, read first: a setting it refuses stops the start before anything opens
  const connection = kafkaConnection(options.env, { ...(options.brokers ? { brokers: options.brokers } : {}), defaultBrokers: DEFAULT_BROKERS });
  const registry = registrySettings(options.env, { ...(options.registryUrl ? { url: options.registryUrl } : {}) });
  // off unless OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT is set: a span per transaction and per traced record
  const tracing = await openTracing(options.env, { serviceName: 'veil-stream', log: logger });
  const active = await openActiveEngine({ configFile: options.configFile, dataDir: options.dataDir, env: options.env, now: options.now, provision: options.development, ...(options.notice ? { notice: options.notice } : {}) });
  // the KEK stopping and answering again: once per change, on this process's log
  logKekTransitions(active.lease, logger);
  const { config, engine } = active;
  // opened on first use: only pipelines whose fields are scoped to the data subject read it; refused
  // here, at start, when subject keys would be split between processes or lost with the data dir
  const subjects = await active.orClose(() => lazySubjectKeyStore({ keystore: active.keystore, dataDir: options.dataDir, settings: subjectStoreSettings(options.env), env: options.env, config: config.engine }));
  const startedOn = active.file(active.holder.get().version);
  const names = options.pipelines ?? Object.keys(config.pipelines);
  const { rewrap } = options;
  // what runs under a pipeline's name: the pipeline, or its rewrap
  const configOf = (c: VeilConfig, name: string): PipelineConfig | undefined => {
    const p = c.pipelines[name];
    return p && rewrap ? rewrapPipeline(name, p, rewrap) : p;
  };
  try {
    for (const n of names) if (!config.pipelines[n]) throw new VeilError('CONFIG_INVALID', `no pipeline ${n} in ${options.configFile} (active version ${active.holder.get().version})`);
    if (names.length === 0) throw new VeilError('CONFIG_INVALID', `${options.configFile} defines no pipelines`);
    if (rewrap && names.length !== 1) throw new VeilError('CONFIG_INVALID', 'rewrap re-protects the clean topic of one pipeline: name it with --pipeline');
    for (const n of names) configOf(config, n);
  } catch (e) {
    await active.close();
    throw e;
  }

  const client = options.kafka ?? await openKafkaPort(streamClient(options.client ?? options.env.VEIL_STREAM_CLIENT), {
    connection,
    clientId: 'veil-stream',
    log: (level, message, extra) => logger[level]({ kafka: extra }, message),
  });
  const killInCommit = Number(options.env.VEIL_FAULT_KILL_IN_COMMIT ?? 0);
  const kafka = killInCommit > 0 ? killingInCommit(client, killInCommit) : client;
  const metrics = new StreamMetrics();
  active.kmsMetrics?.registerIn(metrics.registry);
  const serdeOf = serdes(registry);
  const threads = protectThreads(options.env.VEIL_PROTECT_THREADS);
  const pools: ProtectPool[] = [];
  const pipelines = await Promise.all(names.map(async (name) => {
    const p = configOf(config, name)!;
    const serde = await serdeOf(p);
    let protector: ProtectPool | undefined;
    // a pipeline whose records name their data subject protects in this thread (the subject keys are this process's)
    if (threads > 0 && !p.subject) {
      const workerData: ProtectWorkerData = { configFile: startedOn, dataDir: options.dataDir, env: { ...options.env }, pipeline: name, ...(options.registryUrl ? { registryUrl: options.registryUrl } : {}), ...(rewrap ? { rewrap } : {}) };
      protector = new ProtectPool(threads, (configFile) => new Worker(PROTECT_WORKER, { workerData: { ...workerData, configFile: configFile ?? startedOn } }));
      pools.push(protector);
    }
    return new ProtectPipeline({ name, config: p, configVersion: config.version, engine, kafka, serde, metrics, log: logger, stallMs: Number(options.env.VEIL_STREAM_STALL_MS ?? 60_000), ...(protector ? { protector } : {}), ...(rewrap ? { rewrap: { unprotectEvidences: rewrap.unprotectEvidences } } : {}), tracing, subjects });
  }));
  try {
    await Promise.all(pools.map((p) => p.ready()));
  } catch (e) {
    await Promise.all(pools.map((p) => p.close()));
    await active.close();
    throw e;
  }
  // a version published or a key rotated by another process: bound from the next batch on
  const followVersion = async () => {
    const { config: next, engine: nextEngine, version } = active.holder.get();
    for (const pipeline of pipelines) {
      const p = configOf(next, pipeline.name);
      try {
        if (!p) throw new VeilError('CONFIG_INVALID', `version ${version} has no pipeline ${pipeline.name}: restart the process to stop it`);
        await pipeline.follow({ config: p, configVersion: next.version, engine: nextEngine, serde: await serdeOf(p), configFile: active.file(version) });
        logger.info({ pipeline: pipeline.name, version }, 'pipeline: now protecting under the active version');
      } catch (e) {
        logger.error({ pipeline: pipeline.name, version, code: (e as VeilError).code ?? (e as Error).name, reason: (e as Error).message }, 'pipeline: keeps running the previous version');
      }
    }
  };
  let following = Promise.resolve();
  active.follow({
    logger,
    // one change after the other, each to the version running by then
    onSwap: () => void (following = following.then(followVersion)),
    onKeys: () => void Promise.all(pipelines.map((p) => p.reloadKeys())).catch((e: unknown) => logger.error({ error: (e as Error).name }, 'protection threads: the keystore could not be re-read')),
  });
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
      await following;
      await Promise.all(pools.map((p) => p.close()));
      await kafka.disconnect();
      await ops?.close();
      await subjects.close();
      await active.close();
      await tracing.shutdown();
    },
    async listen(port, host) {
      ops = Fastify({ logger: false });
      registerOpsRoutes(ops, {
        // liveness is what a restart fixes (a halted pipeline, a batch stuck while Kafka answers); a
        // Kafka (or registry) that does not answer turns /readyz red instead, and shows here
        live: () => {
          const failing = pipelines.map((p) => ({ pipeline: p.name, ...p.health() })).filter((h) => !h.healthy).map(({ pipeline, reason }) => ({ pipeline, reason }));
          const shared = active.liveness();
          // schema versions a pipeline refuses (a mapped path they lack): shown, healthy or not; the pipeline progresses
          const refused = pipelines.flatMap((p) => p.refusedSchemas().map((r) => ({ pipeline: p.name, ...r })));
          const notReady = pipelines.map((p) => ({ pipeline: p.name, ...p.readiness() })).filter((r) => !r.ready).map(({ pipeline, reason }) => ({ pipeline, reason }));
          const info = { ...shared.info, ...(refused.length ? { refusedSchemas: refused } : {}), ...(notReady.length ? { notReady } : {}) };
          if (!failing.length && shared.healthy) return { healthy: true, info };
          return { healthy: false, detail: { ...(failing.length ? { pipelines: failing } : {}), ...shared.detail, ...info } };
        },
        ready: () => running && pipelines.every((p) => p.readiness().ready),
        metrics: metrics.registry,
      });
      await ops.listen({ port, host });
      return ops.server;
    },
  };
}
