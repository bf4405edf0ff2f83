import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { DestinationStream, Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import { FileAuditSink, type AuditSink } from '../audit/index.ts';
import { ROLE, VeilError } from '../engine/index.ts';
import { ADMIN_ROLE_NAMES, CachingVerifier, devClient, hashClientSecret, TokenService, TokenVerifier, type Client } from '../identity/index.ts';
import { ensureKey, JwtSigner, logKekTransitions, type LocalKeystore } from '../keystore/index.ts';
import { buildServer } from '../http/server.ts';
import { HttpMetrics } from '../http/metrics.ts';
import { createLogger } from './logger.ts';
import { openActiveEngine, type ActiveEngine } from './open-active-engine.ts';
import { ConfigVersions, EngineHolder } from '../control/index.ts';
import type { VeilConfig } from './config-file.ts';
import { openPortal } from './open-portal.ts';
import type { PipelineMetrics } from '../portal/pipeline-metrics.ts';
import { openTracing, type Tracing } from '../observability/index.ts';
import { dbSocketOptionsFromEnv, openDbSocket } from '../db/index.ts';
import { ErasureService, lazySubjectKeyStore, subjectStoreSettings, type SubjectKeyStore } from '../subjects/index.ts';
import { receiptPublicKeys } from '../subjects/receipt.ts';

export interface ServiceOptions {
  configFile: string;
  dataDir: string;
  env: Readonly<Record<string, string | undefined>>;
  now: () => Date;
  /** the service's base URL, the default token issuer */
  baseUrl: string;
  /** development mode: create missing keys and the veil-dev client */
  development: boolean;
  logDestination?: DestinationStream;
  logLevel?: string;
  audit?: AuditSink;
  /** lines for the operator at start (which master key, the dev client's secret file) */
  notice?: (line: string) => void;
  /**
   * How long a request body may take to arrive (default 30 s). Belongs in service.limits of the
   * configuration file, whose schema does not have it yet; until then it is set here.
   */
  bodyReadTimeoutMs?: number;
  /** how often the data dir is polled for a version another process published (default 1000 ms) */
  versionPollMs?: number;
  /** how often the pipelines' processor metrics URLs are scraped for the portal (default 5000 ms) */
  metricsScrapeMs?: number;
}

export interface Service {
  app: FastifyInstance;
  logger: Logger;
  issuer: string;
  audit: AuditSink;
  keystore: LocalKeystore;
  /** the active configuration and its engine; the admin portal's publish swaps it */
  holder: EngineHolder<VeilConfig>;
  versions: ConfigVersions;
  /** the subject-key store (VEIL_SUBJECT_STORE), opened on first use: subject-scoped keys, erasures */
  subjects: SubjectKeyStore;
  /** the processor metrics the portal's Pipelines page charts */
  pipelineMetrics: PipelineMetrics;
  /** whether the listener serves HTTPS (service.tls) */
  tls: boolean;
  devClient?: { id: string; secretFile: string; secret: string };
  /**
   * Graceful stop: /readyz turns 503 at once, calls keep being served for `delayMs` (so a load
   * balancer stops routing and connections already queued are accepted), then the listener
   * closes and in-flight calls finish.
   */
  drain(delayMs: number): Promise<void>;
}

/**
 * Wires config, keystore, identity, audit and engine into the HTTP service (not yet listening),
 * with the admin portal under /admin (open-portal.ts). The configuration runs from the data dir's
 * published versions (src/control/config-versions.ts): the configuration file is adopted as a new
 * version when it changed.
 */
export async function openService(options: ServiceOptions): Promise<Service> {
  const logger = createLogger(options.logLevel ?? options.env.VEIL_LOG_LEVEL ?? 'info', options.logDestination);
  // off unless OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT is set: a span per POST /transform call
  const tracing = await openTracing(options.env, { serviceName: 'veil-serve', log: logger });
  // the configuration file is adopted as a published version when it changed; the active version runs
  // with a shared control store (VEIL_CONTROL_STORE=kafka) the data dir is its mirror, filled here first
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
  const { config, keystore, warnings, holder, versions } = active;
  for (const w of warnings) logger.warn({ pointer: w.pointer }, `configuration: ${w.message}`);
  if (await ensureKey(keystore, config.identity.signingKey, 'jwt-es256')) options.notice?.(`created token signing key ${config.identity.signingKey}`);

  // refused here, before the listener, when subject keys would be split between processes or lost with the data dir
  const subjects = await active.orClose(() =>
    lazySubjectKeyStore({ keystore, dataDir: options.dataDir, settings: subjectStoreSettings(options.env), env: options.env, config: config.engine }),
  );
  const dev = options.development ? await developmentClient(config, options) : undefined;
  const identity = serviceIdentity(config, keystore, options, dev);
  const { issuer, tokens, verifier } = identity;
  const audit = options.audit ?? new FileAuditSink(join(options.dataDir, 'audit.log'), config.service.audit);
  // the admin API's and the portal's erasures: receipts signed by the key set's veil-receipts, issued as this service
  const erasures = new ErasureService({ store: subjects, keys: keystore, audit, issuer, now: options.now });
  let draining = false;
  const { app, service, tls } = await httpService(options, { active, identity, audit, logger, tracing, subjects, erasures, ready: () => !draining });
  const pipelineMetrics = openPortal(app, {
    holder,
    versions,
    keystore,
    tokens,
    verifier,
    audit,
    logger,
    now: options.now,
    development: options.development,
    baseUrl: options.baseUrl,
    devClientId: dev?.id,
    metricsScrapeMs: options.metricsScrapeMs,
    erasures,
  });
  // a version published by another process (a --workers sibling, another host through the control store) runs here too
  active.follow({ logger, intervalMs: options.versionPollMs ?? 1000 });
  pipelineMetrics.start();
  const dbSocket = await openServiceDbSocket(options, { active, verifier, audit, logger, service, subjects });
  const drain = closedWithApp(app, { ...(dbSocket ? { dbSocket } : {}), pipelineMetrics, audit, subjects, active, tracing }, () => {
    draining = true;
  });
  return {
    app,
    logger,
    issuer,
    audit,
    keystore,
    holder,
    versions,
    subjects,
    pipelineMetrics,
    drain,
    tls,
    ...(dev ? { devClient: { id: dev.id, secretFile: dev.secretFile, secret: dev.secret } } : {}),
  };
}

/** who the service is: its issuer, the key its tokens are signed with, the token endpoint and the bearer tokens' check */
interface ServiceIdentity {
  issuer: string;
  signer: JwtSigner;
  tokens: TokenService;
  verifier: CachingVerifier;
}

function serviceIdentity(
  config: VeilConfig,
  keystore: LocalKeystore,
  options: ServiceOptions,
  dev: { id: string; client: Client } | undefined,
): ServiceIdentity {
  const issuer = config.identity.issuer ?? options.baseUrl;
  const signer = new JwtSigner(keystore, config.identity.signingKey);
  const tokens = new TokenService({
    identity: config.identity,
    issuer,
    signer,
    now: options.now,
    extraClients: new Map<string, Client>(dev ? [[dev.id, dev.client]] : []),
    failuresPerMinute: config.service.rateLimit.tokenFailuresPerMinute,
    decoyHash: hashClientSecret(randomBytes(16).toString('hex')),
  });
  const verifier = new CachingVerifier(new TokenVerifier({ identity: config.identity, issuer, signer, now: options.now }), { now: options.now });
  return { issuer, signer, tokens, verifier };
}

/** the HTTP service (src/http) over the active engine, not yet listening: its settings (the body deadline given), HTTPS when service.tls is set */
async function httpService(
  options: ServiceOptions,
  deps: {
    active: ActiveEngine;
    identity: ServiceIdentity;
    audit: AuditSink;
    logger: Logger;
    tracing: Tracing;
    subjects: SubjectKeyStore;
    erasures: ErasureService;
    ready: () => boolean;
  },
): Promise<{ app: FastifyInstance; service: VeilConfig['service']; tls: boolean }> {
  const { active, identity, logger } = deps;
  const { config, holder, keystore } = active;
  const service =
    options.bodyReadTimeoutMs === undefined
      ? config.service
      : { ...config.service, limits: { ...config.service.limits, bodyReadTimeoutMs: options.bodyReadTimeoutMs } };
  const tls = config.service.tls;
  const https = tls ? await readTls(tls) : undefined;
  const metrics = new HttpMetrics();
  active.kmsMetrics?.registerIn(metrics.registry);
  const app = buildServer({
    engine: holder,
    metrics,
    service,
    issuer: identity.issuer,
    signer: identity.signer,
    tokens: identity.tokens,
    verifier: identity.verifier,
    audit: deps.audit,
    logger,
    now: options.now,
    ready: deps.ready,
    live: () => active.liveness(),
    ...(https ? { https } : {}),
    tracing: deps.tracing,
    configVersion: () => holder.get().config.version,
    subjects: deps.subjects,
    erasures: deps.erasures,
    // every version of the receipt key, for anyone to verify a receipt without veil (issue 43)
    receiptKeys: receiptPublicKeys(keystore),
  });
  return { app, service, tls: https !== undefined };
}

/** what the service opened besides its app, closed with it: the database socket first, the control store and tracing last */
interface ServiceParts {
  dbSocket?: { close(): Promise<void> };
  pipelineMetrics: PipelineMetrics;
  audit: AuditSink;
  subjects: SubjectKeyStore;
  active: ActiveEngine;
  tracing: Tracing;
}

/** closes `parts` when the app closes, `draining` (readiness turns false) first; returns Service.drain */
function closedWithApp(app: FastifyInstance, parts: ServiceParts, draining: () => void): (delayMs: number) => Promise<void> {
  app.addHook('onClose', async () => {
    draining();
    await parts.dbSocket?.close();
    await parts.pipelineMetrics.stop();
    await parts.audit.close();
    await parts.subjects.close();
    await parts.active.close();
    await parts.tracing.shutdown();
  });
  return async (delayMs: number) => {
    draining();
    await new Promise((r) => setTimeout(r, delayMs));
    await app.close();
  };
}

/** `--development`: a client holding every role the configuration uses and every admin portal right, its secret in the data dir */
async function developmentClient(config: VeilConfig, options: ServiceOptions): Promise<{ id: string; client: Client; secretFile: string; secret: string }> {
  const roles = [...new Set(config.engine.rightsContexts.flatMap((c) => c.evidences.filter(([n]) => n === ROLE).map(([, v]) => v))), ...ADMIN_ROLE_NAMES];
  const d = await devClient(options.dataDir, roles);
  options.notice?.(`development client ${d.id} (roles ${roles.join(', ')}): secret in ${d.secretFile}${d.created ? ' (created now)' : ''}`);
  return d;
}

/** VEIL_DB_SOCKET: PostgreSQL's triggers protect over a local Unix socket (docs/database.md); undefined when it is not set */
async function openServiceDbSocket(
  options: ServiceOptions,
  deps: { active: ActiveEngine; verifier: CachingVerifier; audit: AuditSink; logger: Logger; service: VeilConfig['service']; subjects: SubjectKeyStore },
): Promise<{ close(): Promise<void> } | undefined> {
  const socketOptions = dbSocketOptionsFromEnv(options.env);
  if (!socketOptions) return undefined;
  const { holder, keystore } = deps.active;
  return openDbSocket(socketOptions, {
    engine: () => holder.current(),
    verifier: deps.verifier,
    audit: deps.audit,
    now: options.now,
    log: deps.logger,
    limits: deps.service.limits,
    rateLimit: deps.service.rateLimit,
    subjects: deps.subjects,
    // VEIL_DB_SOCKET_LEASES=on: the database may lease keys of fields it may protect (docs/database.md, "Leased keys")
    ...(socketOptions.leases
      ? {
          leases: {
            ...socketOptions.leases,
            keys: keystore,
            source: () => {
              const a = holder.get();
              return { engine: a.engine, config: a.config.engine };
            },
          },
        }
      : {}),
  });
}

/** service.tls: the certificate chain and private key, PEM files read once at start. */
async function readTls(tls: { certFile: string; keyFile: string }): Promise<{ cert: Buffer; key: Buffer }> {
  const read = (file: string, what: string) =>
    readFile(file).catch((e: NodeJS.ErrnoException) => {
      throw new VeilError('CONFIG_INVALID', `service.tls.${what} ${file} cannot be read (${e.code ?? 'unreadable'})`);
    });
  return { cert: await read(tls.certFile, 'certFile'), key: await read(tls.keyFile, 'keyFile') };
}
