import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import { Engine } from '../engine/engine.ts';
import { VeilError } from '../engine/errors.ts';
import { LocalKeystore } from '../keystore/local-keystore.ts';
import { describeMasterKeySource, resolveMasterKey } from '../keystore/master-key.ts';
import { kafkajsPort } from '../stream/kafkajs-adapter.ts';
import type { KafkaPort, SchemaRegistryPort } from '../stream/ports.ts';
import { ProtectPipeline } from '../stream/protect-pipeline.ts';
import { killingInCommit } from '../stream/fault-injection.ts';
import { jsonSerde } from '../stream/serde/json-serde.ts';
import type { Serde } from '../stream/serde/serde.ts';
import { StreamMetrics } from '../stream/stream-metrics.ts';
import { requireConfig } from './config-file.ts';
import type { CompiledConfig } from '../engine/config/compiled.ts';
import { provisionKeys, requireKeys } from './config-keys.ts';
import { createLogger } from './open-service.ts';

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
  /** a KafkaPort to use instead of kafkajs (tests, alternative clients) */
  kafka?: KafkaPort;
}

export interface StreamService {
  pipelines: ProtectPipeline[];
  metrics: StreamMetrics;
  logger: Logger;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** /healthz, /readyz, /metrics on a port */
  listen(port: number, host: string): Promise<Server>;
}

/** Config, keystore (keys provisioned in development) and engine: what every Kafka process needs. */
export async function openEngineAndKeys(options: Pick<StreamOptions, 'configFile' | 'dataDir' | 'env' | 'now' | 'development' | 'notice'>): Promise<{ config: CompiledConfig; keystore: LocalKeystore; engine: Engine }> {
  const { config } = await requireConfig(options.configFile);
  const master = await resolveMasterKey({ dataDir: options.dataDir, env: options.env });
  if (master.source.kind === 'file') options.notice?.(describeMasterKeySource(master.source));
  const keystore = await LocalKeystore.open({ dataDir: options.dataDir, masterKey: master.key, now: options.now });
  if (options.development) await provisionKeys(config, keystore);
  requireKeys(config, keystore);
  return { config, keystore, engine: new Engine({ config, keys: keystore }) };
}

/** Wires config, keystore, engine, Kafka and the registry into the protect pipelines. */
export async function openStream(options: StreamOptions): Promise<StreamService> {
  const logger = options.logger ?? createLogger(options.env.VEIL_LOG_LEVEL ?? 'info');
  const { config, engine } = await openEngineAndKeys(options);
  const names = options.pipelines ?? Object.keys(config.pipelines);
  for (const n of names) if (!config.pipelines[n]) throw new VeilError('CONFIG_INVALID', `no pipeline ${n} in ${options.configFile}`);
  if (names.length === 0) throw new VeilError('CONFIG_INVALID', `${options.configFile} defines no pipelines`);

  const client = options.kafka ?? kafkajsPort({
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
    },
    async listen(port, host) {
      const server = createServer(async (req, res) => {
        if (req.url === '/healthz') {
          // liveness is progress: a stalled, halted or crashed pipeline fails it
          const failing = pipelines.map((p) => ({ pipeline: p.name, ...p.health() })).filter((h) => !h.healthy).map(({ pipeline, reason }) => ({ pipeline, reason }));
          return void res.writeHead(failing.length ? 503 : 200, { 'content-type': 'application/json' }).end(JSON.stringify(failing.length ? { status: 'failing', pipelines: failing } : { status: 'ok' }));
        }
        if (req.url === '/readyz') return void res.writeHead(running ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: running ? 'ready' : 'not ready' }));
        if (req.url === '/metrics') return void res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(await metrics.registry.metrics());
        res.writeHead(404).end();
      });
      await new Promise<void>((r) => server.listen(port, host, r));
      return server;
    },
  };
}
