import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Server } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { registerOpsRoutes } from '../http/routes/ops-routes.ts';
import { VeilError } from '../engine/index.ts';
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
import { pipelinesLiveness, StreamMetrics } from '../stream/protect/index.ts';
import { createLogger } from './logger.ts';
import { openActiveEngine, type ActiveEngine } from './open-active-engine.ts';
import { logKekTransitions } from '../keystore/index.ts';
import { openTracing } from '../observability/index.ts';
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
  const active = await openActiveEngine({
    configFile: options.configFile,
    dataDir: options.dataDir,
    env: options.env,
    now: options.now,
    provision: options.development,
    ...(options.notice ? { notice: options.notice } : {}),
  });
  // the KEK stopping and answering again: once per change, on this process's log
  logKekTransitions(active.lease, logger);
  // opened on first use: only pipelines whose fields are scoped to the data subject read it; refused
  // here, at start, when subject keys would be split between processes or lost with the data dir
  const subjects = await active.orClose(() =>
    lazySubjectKeyStore({
      keystore: active.keystore,
      dataDir: options.dataDir,
      settings: subjectStoreSettings(options.env),
      env: options.env,
      config: active.config.engine,
    }),
  );
  const names = options.pipelines ?? Object.keys(active.config.pipelines);
  const configOf = pipelineConfigOf(options.rewrap);
  await active.orClose(() => checkPipelines(names, active.config, configOf, options, active.holder.get().version));
  const client =
    options.kafka ??
    (await openKafkaPort(streamClient(options.client ?? options.env.VEIL_STREAM_CLIENT), {
      connection,
      clientId: 'veil-stream',
      log: (level, message, extra) => logger[level]({ kafka: extra }, message),
    }));
  const killInCommit = Number(options.env.VEIL_FAULT_KILL_IN_COMMIT ?? 0);
  const kafka = killInCommit > 0 ? killingInCommit(client, killInCommit) : client;
  const metrics = new StreamMetrics();
  active.kmsMetrics?.registerIn(metrics.registry);
  const serdeOf = serdes(registry);
  const pools: ProtectPool[] = [];
  const pipelines = await Promise.all(
    names.map(async (name) => {
      const p = configOf(active.config, name)!;
      const protector = protectorFor(name, p, active.file(active.holder.get().version), options, pools);
      return new ProtectPipeline({
        name,
        config: p,
        configVersion: active.config.version,
        engine: active.engine,
        kafka,
        serde: await serdeOf(p),
        metrics,
        log: logger,
        stallMs: Number(options.env.VEIL_STREAM_STALL_MS ?? 60_000),
        ...(protector ? { protector } : {}),
        ...(options.rewrap ? { rewrap: { unprotectEvidences: options.rewrap.unprotectEvidences } } : {}),
        tracing,
        subjects,
      });
    }),
  );
  try {
    await Promise.all(pools.map((p) => p.ready()));
  } catch (e) {
    await Promise.all(pools.map((p) => p.close()));
    await active.close();
    throw e;
  }
  const following = followVersions(active, pipelines, configOf, serdeOf, logger);
  return streamService({ names, pipelines, pools, metrics, logger, kafka, active, subjects, tracing, following });
}

/** what runs under a pipeline's name: the pipeline, or its rewrap */
function pipelineConfigOf(rewrap: RewrapSpec | undefined): (c: VeilConfig, name: string) => PipelineConfig | undefined {
  return (c, name) => {
    const p = c.pipelines[name];
    return p && rewrap ? rewrapPipeline(name, p, rewrap) : p;
  };
}

/** the pipelines named exist, and a rewrap names exactly one: else CONFIG_INVALID, before anything opens */
function checkPipelines(
  names: readonly string[],
  config: VeilConfig,
  configOf: (c: VeilConfig, name: string) => PipelineConfig | undefined,
  options: StreamOptions,
  activeVersion: number,
): void {
  for (const n of names)
    if (!config.pipelines[n]) throw new VeilError('CONFIG_INVALID', `no pipeline ${n} in ${options.configFile} (active version ${activeVersion})`);
  if (names.length === 0) throw new VeilError('CONFIG_INVALID', `${options.configFile} defines no pipelines`);
  if (options.rewrap && names.length !== 1)
    throw new VeilError('CONFIG_INVALID', 'rewrap re-protects the clean topic of one pipeline: name it with --pipeline');
  for (const n of names) configOf(config, n);
}

/** a pipeline's protection threads (added to `pools`), or none: a pipeline whose records name their data subject protects in this thread (the subject keys are this process's) */
function protectorFor(name: string, p: PipelineConfig, startedOn: string, options: StreamOptions, pools: ProtectPool[]): ProtectPool | undefined {
  const threads = protectThreads(options.env.VEIL_PROTECT_THREADS);
  if (threads === 0 || p.subject) return undefined;
  const workerData: ProtectWorkerData = {
    configFile: startedOn,
    dataDir: options.dataDir,
    env: { ...options.env },
    pipeline: name,
    ...(options.registryUrl ? { registryUrl: options.registryUrl } : {}),
    ...(options.rewrap ? { rewrap: options.rewrap } : {}),
  };
  const pool = new ProtectPool(threads, (configFile) => new Worker(PROTECT_WORKER, { workerData: { ...workerData, configFile: configFile ?? startedOn } }));
  pools.push(pool);
  return pool;
}

/**
 * A version published or a key rotated by another process: bound from the next batch on, one
 * change after the other, each to the version running by then. Returns the changes' chain so far.
 */
function followVersions(
  active: ActiveEngine,
  pipelines: readonly ProtectPipeline[],
  configOf: (c: VeilConfig, name: string) => PipelineConfig | undefined,
  serdeOf: ReturnType<typeof serdes>,
  logger: Logger,
): () => Promise<void> {
  const followVersion = async () => {
    const { config: next, engine, version } = active.holder.get();
    for (const pipeline of pipelines) {
      const p = configOf(next, pipeline.name);
      try {
        if (!p) throw new VeilError('CONFIG_INVALID', `version ${version} has no pipeline ${pipeline.name}: restart the process to stop it`);
        await pipeline.follow({ config: p, configVersion: next.version, engine, serde: await serdeOf(p), configFile: active.file(version) });
        logger.info({ pipeline: pipeline.name, version }, 'pipeline: now protecting under the active version');
      } catch (e) {
        logger.error(
          { pipeline: pipeline.name, version, code: (e as VeilError).code ?? (e as Error).name, reason: (e as Error).message },
          'pipeline: keeps running the previous version',
        );
      }
    }
  };
  let following = Promise.resolve();
  active.follow({
    logger,
    onSwap: () => void (following = following.then(followVersion)),
    onKeys: () =>
      void Promise.all(pipelines.map((p) => p.reloadKeys())).catch((e: unknown) =>
        logger.error({ error: (e as Error).name }, 'protection threads: the keystore could not be re-read'),
      ),
  });
  return () => following;
}

/** what `veil stream` opened, for its service to start, watch and close */
export interface StreamParts {
  names: readonly string[];
  pipelines: ProtectPipeline[];
  pools: readonly ProtectPool[];
  metrics: StreamMetrics;
  logger: Logger;
  kafka: KafkaPort;
  active: ActiveEngine;
  subjects: { close(): Promise<void> };
  tracing: { shutdown(): Promise<void> };
  /** the chain of configuration changes being followed (they finish before the pools close) */
  following: () => Promise<void>;
}

export function streamService(parts: StreamParts): StreamService {
  const { pipelines, metrics, logger } = parts;
  let running = false;
  let ops: FastifyInstance | undefined;
  return {
    pipelines,
    metrics,
    logger,
    async start() {
      await Promise.all(pipelines.map((p) => p.start()));
      running = true;
      logger.info({ pipelines: parts.names }, 'pipelines running');
    },
    async stop() {
      running = false;
      await Promise.all(pipelines.map((p) => p.stop()));
      await parts.following();
      await Promise.all(parts.pools.map((p) => p.close()));
      await parts.kafka.disconnect();
      await ops?.close();
      await parts.subjects.close();
      await parts.active.close();
      await parts.tracing.shutdown();
    },
    async listen(port, host) {
      ops = Fastify({ logger: false });
      registerOpsRoutes(ops, {
        live: () => pipelinesLiveness(pipelines, parts.active.liveness()),
        ready: () => running && pipelines.every((p) => p.readiness().ready),
        metrics: metrics.registry,
      });
      await ops.listen({ port, host });
      return ops.server;
    },
  };
}
