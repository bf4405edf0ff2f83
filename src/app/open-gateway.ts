import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { DestinationStream, Logger } from 'pino';
import { FileAuditSink, type AuditSink } from '../audit/index.ts';
import { GuardedTransform } from '../audit/index.ts';
import { VeilError } from '../engine/index.ts';
import { FieldTransformer } from '../gateway/field-transformer.ts';
import type { GatewayConfig } from '../gateway/gateway-config.ts';
import { createGateway, type Gateway, type GatewayParts } from '../gateway/gateway-server.ts';
import { CachingVerifier, TokenVerifier } from '../identity/index.ts';
import { ensureKey, JwtSigner, logKekTransitions } from '../keystore/index.ts';
import type { ActiveConfig } from '../control/index.ts';
import type { VeilConfig } from './config-file.ts';
import { createLogger } from './logger.ts';
import { openActiveEngine } from './open-active-engine.ts';
import { openTracing } from '../observability/index.ts';

export interface GatewayOptions {
  configFile: string;
  dataDir: string;
  env: Readonly<Record<string, string | undefined>>;
  now: () => Date;
  /** the issuer of veil's own tokens (identity.issuer wins): the base URL of `veil serve` */
  issuer: string;
  /** development: create the keys the configuration references and the token signing key when missing */
  development: boolean;
  logDestination?: DestinationStream;
  logLevel?: string;
  audit?: AuditSink;
  notice?: (line: string) => void;
  /** how often the data dir is polled for a version or keystore change another process made (default 1000 ms) */
  versionPollMs?: number;
}

export interface OpenedGateway extends Gateway {
  /** the gateway section the process started with (listen and tls are read once, at start) */
  config: GatewayConfig;
  /** the gateway section running now: it follows the active configuration version */
  current(): GatewayConfig;
  logger: Logger;
  audit: AuditSink;
}

/**
 * Wires `veil gateway`: the configuration's gateway section, the engine (in process), veil's token
 * verifier (its own tokens through the keystore's signing key, and the configured external
 * providers), the audit sink (channel `gateway`) and the proxy. Not yet listening. Like `veil
 * serve`, it runs the data dir's active configuration version (the file is adopted as a version
 * when it changed) and follows what other processes publish there: a version published in the
 * portal (a grant revoked, a route changed) and a key created or rotated are picked up within
 * `versionPollMs`, without a restart (ActiveVersionWatch). A version without a gateway section
 * keeps the routes running, with its engine.
 */
export async function openGateway(options: GatewayOptions): Promise<OpenedGateway> {
  const logger = createLogger(options.logLevel ?? options.env.VEIL_LOG_LEVEL ?? 'info', options.logDestination);
  // off unless OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT is set: a span per exchange, its traceparent sent upstream
  const tracing = await openTracing(options.env, { serviceName: 'veil-gateway', log: logger });
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
  const { config, keystore, warnings, holder } = active;
  if (!config.gateway) {
    await active.close();
    throw new VeilError('CONFIG_INVALID', `configuration ${options.configFile} has no gateway section`);
  }
  for (const w of warnings) logger.warn({ pointer: w.pointer }, `configuration: ${w.message}`);
  const signingKey = config.identity.signingKey;
  if (options.development && (await ensureKey(keystore, signingKey, 'jwt-es256'))) options.notice?.(`created token signing key ${signingKey}`);
  // every writer of the data dir's audit log rotates it alike: one keeping fewer files would delete what the configuration keeps
  const audit = options.audit ?? new FileAuditSink(join(options.dataDir, 'audit.log'), config.service.audit);
  const build = (activeConfig: ActiveConfig<VeilConfig>, fallback: GatewayConfig): GatewayParts => {
    const { config: c, engine: e } = activeConfig;
    const gatewayConfig = c.gateway ?? fallback;
    const issuer = c.identity.issuer ?? options.issuer;
    const verifier = new CachingVerifier(
      new TokenVerifier({ identity: c.identity, issuer, signer: new JwtSigner(keystore, c.identity.signingKey), now: options.now }),
      { now: options.now },
    );
    const guard = new GuardedTransform({ engine: e, audit, now: options.now, channel: 'gateway', scope: 'revealing' });
    const transformer = new FieldTransformer({ engine: e, guard, actions: gatewayConfig.actions, warn: (message) => logger.warn(message) });
    return { config: gatewayConfig, transformer, verifier, version: c.version };
  };
  let parts = build(holder.get(), config.gateway);
  active.follow({
    logger,
    intervalMs: options.versionPollMs ?? 1000,
    onSwap: () => {
      if (!holder.get().config.gateway)
        logger.warn(
          { version: holder.get().version },
          'configuration: the active version has no gateway section; its engine runs with the routes running before',
        );
      parts = build(holder.get(), parts.config);
    },
  });
  const tls = config.gateway.tls
    ? { cert: await readFile(resolve(config.gateway.tls.certFile)), key: await readFile(resolve(config.gateway.tls.keyFile)) }
    : undefined;
  const gateway = createGateway({ parts: () => parts, logger, live: () => active.liveness(), ...(tls ? { tls } : {}), tracing });
  active.kmsMetrics?.registerIn(gateway.metrics.registry);
  return {
    ...gateway,
    config: config.gateway,
    current: () => parts.config,
    logger,
    audit,
    async drain(graceMs) {
      await gateway.drain(graceMs);
      await audit.close();
      await active.close();
      await tracing.shutdown();
    },
  };
}
