import { join } from 'node:path';
import type { DestinationStream, Logger } from 'pino';
import { FileAuditSink, type AuditSink } from '../audit/audit-sink.ts';
import { GuardedTransform } from '../audit/guarded-transform.ts';
import { VeilError } from '../engine/index.ts';
import { FieldTransformer } from '../gateway/field-transformer.ts';
import type { GatewayConfig } from '../gateway/gateway-config.ts';
import { createGateway, type Gateway } from '../gateway/gateway-server.ts';
import { CachingVerifier } from '../identity/caching-verifier.ts';
import { TokenVerifier } from '../identity/token-verifier.ts';
import { JwtSigner } from '../keystore/jwt-signer.ts';
import { createLogger } from './logger.ts';
import { openEngine } from './open-engine.ts';

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
}

export interface OpenedGateway extends Gateway {
  config: GatewayConfig;
  logger: Logger;
  audit: AuditSink;
}

/**
 * Wires `veil gateway`: the configuration's gateway section, the engine (openEngine, in process),
 * veil's token verifier (its own tokens through the keystore's signing key, and the configured
 * external providers), the audit sink (channel `gateway`) and the proxy. Not yet listening.
 */
export async function openGateway(options: GatewayOptions): Promise<OpenedGateway> {
  const logger = createLogger(options.logLevel ?? options.env.VEIL_LOG_LEVEL ?? 'info', options.logDestination);
  const { config, engine, keystore, warnings } = await openEngine({
    configFile: options.configFile, dataDir: options.dataDir, env: options.env, now: options.now, provision: options.development, notice: options.notice,
  });
  if (!config.gateway) throw new VeilError('CONFIG_INVALID', `configuration ${options.configFile} has no gateway section`);
  for (const w of warnings) logger.warn({ pointer: w.pointer }, `configuration: ${w.message}`);
  const signingKey = config.identity.signingKey;
  if (options.development && !keystore.info(signingKey)) {
    await keystore.create(signingKey, 'jwt-es256');
    options.notice?.(`created token signing key ${signingKey}`);
  }
  const issuer = config.identity.issuer ?? options.issuer;
  const verifier = new CachingVerifier(new TokenVerifier({ identity: config.identity, issuer, signer: new JwtSigner(keystore, signingKey), now: options.now }), { now: options.now });
  const audit = options.audit ?? new FileAuditSink(join(options.dataDir, 'audit.log'));
  const guard = new GuardedTransform({ engine, audit, now: options.now, channel: 'gateway', scope: 'revealing' });
  const transformer = new FieldTransformer({ engine, guard, actions: config.gateway.actions, warn: (message) => logger.warn(message) });
  const gateway = createGateway({ config: config.gateway, transformer, verifier, logger });
  return {
    ...gateway,
    config: config.gateway,
    logger,
    audit,
    async drain(graceMs) {
      await gateway.drain(graceMs);
      await audit.close();
    },
  };
}
