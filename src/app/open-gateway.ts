import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { DestinationStream, Logger } from 'pino';
import { FileAuditSink, type AuditSink } from '../audit/audit-sink.ts';
import { GuardedTransform } from '../audit/guarded-transform.ts';
import { VeilError } from '../engine/index.ts';
import { FieldTransformer } from '../gateway/field-transformer.ts';
import type { GatewayConfig } from '../gateway/gateway-config.ts';
import { createGateway, type Gateway, type GatewayParts } from '../gateway/gateway-server.ts';
import { CachingVerifier } from '../identity/caching-verifier.ts';
import { TokenVerifier } from '../identity/token-verifier.ts';
import { JwtSigner } from '../keystore/jwt-signer.ts';
import type { LocalKeystore } from '../keystore/local-keystore.ts';
import { ConfigVersions } from '../control/config-versions.ts';
import { EngineHolder, type ActiveConfig } from '../control/engine-holder.ts';
import { ActiveVersionWatch } from './active-version-watch.ts';
import { compileVeilConfigText, type VeilConfig } from './config-file.ts';
import { createLogger } from './logger.ts';
import { openControlStore } from './control-store.ts';
import { leaseLiveness, openEngine } from './open-engine.ts';

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
  const control = await openControlStore(options.env, options.dataDir);
  const versions = await ConfigVersions.open(options.dataDir);
  control?.attach({ versions });
  const active = await versions.adopt(options.configFile, options.now(), compileVeilConfigText);
  const { config, engine, keystore, warnings, lease } = await openEngine({
    configFile: active.file, dataDir: options.dataDir, env: options.env, now: options.now, provision: options.development, notice: options.notice, ...(control ? { control } : {}),
  }).catch(async (e: unknown) => {
    // a process that does not start leaves the control store's consumer behind otherwise
    await control?.close();
    throw e;
  });
  if (!config.gateway) throw new VeilError('CONFIG_INVALID', `configuration ${options.configFile} has no gateway section`);
  for (const w of warnings) logger.warn({ pointer: w.pointer }, `configuration: ${w.message}`);
  const signingKey = config.identity.signingKey;
  if (options.development && !keystore.info(signingKey)) {
    await keystore.create(signingKey, 'jwt-es256');
    options.notice?.(`created token signing key ${signingKey}`);
  }
  const audit = options.audit ?? new FileAuditSink(join(options.dataDir, 'audit.log'));
  const build = (activeConfig: ActiveConfig<VeilConfig>, fallback: GatewayConfig): GatewayParts => {
    const { config: c, engine: e } = activeConfig;
    const gatewayConfig = c.gateway ?? fallback;
    const issuer = c.identity.issuer ?? options.issuer;
    const verifier = new CachingVerifier(new TokenVerifier({ identity: c.identity, issuer, signer: new JwtSigner(keystore, c.identity.signingKey), now: options.now }), { now: options.now });
    const guard = new GuardedTransform({ engine: e, audit, now: options.now, channel: 'gateway', scope: 'revealing' });
    const transformer = new FieldTransformer({ engine: e, guard, actions: gatewayConfig.actions, warn: (message) => logger.warn(message) });
    return { config: gatewayConfig, transformer, verifier };
  };
  const holder = new EngineHolder<VeilConfig>({ engine, config, version: active.number });
  let parts = build(holder.get(), config.gateway);
  const watch = followActiveVersion({ versions, keystore, holder, logger, intervalMs: options.versionPollMs ?? 1000 }, () => {
    if (!holder.get().config.gateway) logger.warn({ version: holder.get().version }, 'configuration: the active version has no gateway section; its engine runs with the routes running before');
    parts = build(holder.get(), parts.config);
  });
  const tls = config.gateway.tls ? { cert: await readFile(resolve(config.gateway.tls.certFile)), key: await readFile(resolve(config.gateway.tls.keyFile)) } : undefined;
  const gateway = createGateway({ parts: () => parts, logger, live: () => leaseLiveness(lease), ...(tls ? { tls } : {}) });
  return {
    ...gateway,
    config: config.gateway,
    current: () => parts.config,
    logger,
    audit,
    async drain(graceMs) {
      await watch.stop();
      await gateway.drain(graceMs);
      await audit.close();
      lease?.stop();
      await control?.close();
    },
  };
}

function followActiveVersion(
  deps: { versions: ConfigVersions; keystore: LocalKeystore; holder: EngineHolder<VeilConfig>; logger: Logger; intervalMs: number },
  swapped: () => void,
): ActiveVersionWatch {
  const watch = new ActiveVersionWatch({
    versions: deps.versions, keystore: deps.keystore, holder: deps.holder, intervalMs: deps.intervalMs,
    onSwap: (version) => {
      swapped();
      deps.logger.info({ version }, 'configuration: now running the active version');
    },
    onError: (version, e) => deps.logger.error({ version, code: (e as { code?: string }).code ?? e.name, reason: e.message }, 'configuration: the active version cannot run in this process; the previous one stays'),
  });
  watch.start();
  return watch;
}
