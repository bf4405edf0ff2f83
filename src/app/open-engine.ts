import { Engine, type ConfigIssue } from '../engine/index.ts';
import type { Env } from '../env/index.ts';
import {
  describeMasterKeySource,
  findKeyGaps,
  kekFromEnv,
  KeyLease,
  LocalKeystore,
  MASTER_KEY_ENV,
  opensUnder,
  provisionKeys,
  requireKeys,
  resolveMasterKey,
  type KmsMetrics,
} from '../keystore/index.ts';
import { requireConfig, type VeilConfig } from './config-file.ts';
import type { ControlStore, VersionBuilder } from '../control/index.ts';
import { KeystoreError } from '../keystore/errors.ts';
import { nativePrimitives } from '../native/index.ts';

export interface OpenEngineOptions {
  configFile: string;
  dataDir: string;
  /** VEIL_MASTER_KEY, and VEIL_ENV=production */
  env: Env;
  now: () => Date;
  /** create the keys the configuration references and the keystore lacks (development and the demo) */
  provision: boolean;
  /** where to say which master key is used and which keys were created */
  notice?: (line: string) => void;
  /** the shared control store: key-set changes are committed to it (control-store.ts) */
  control?: ControlStore;
  /** a keystore already opened (openKeystore) */
  opened?: { keystore: LocalKeystore; lease?: KeyLease; kmsMetrics?: KmsMetrics };
}

export interface OpenedEngine {
  config: VeilConfig;
  engine: Engine;
  keystore: LocalKeystore;
  warnings: ConfigIssue[];
  /** with a KMS-held KEK (VEIL_KMS): the lease the keys are used under, for health */
  lease?: KeyLease;
  /** with a KMS-held KEK: its calls as metrics, for the process's /metrics */
  kmsMetrics?: KmsMetrics;
}

/** VEIL_ENV=production: no development master key file, no key creation, no development client. */
export function isProduction(env: Env): boolean {
  return env.VEIL_ENV === 'production';
}

/**
 * What every veil process that transforms starts with: the configuration file (CONFIG_INVALID
 * lists every problem) → the master key (VEIL_MASTER_KEY; outside production a development key
 * file) → the local keystore → in development, the missing keys created → every referenced key
 * present (KEY_UNAVAILABLE otherwise) → the engine.
 */
export async function openEngine(options: OpenEngineOptions): Promise<OpenedEngine> {
  const { config, warnings } = await requireConfig(options.configFile);
  const { keystore, lease, kmsMetrics } = options.opened ?? (await openKeystore(options));
  if (options.provision) {
    const created = await provisionKeys(config.engine, keystore);
    if (created.length) options.notice?.(`created keys ${created.join(', ')} in ${keystore.path}`);
  }
  requireKeys(config.engine, keystore);
  return {
    config,
    // the keyed primitives run on the native core (issue 42): a core that does not load stops veil here, at start
    engine: new Engine({ config: config.engine, keys: keystore, primitives: nativePrimitives() }),
    keystore,
    warnings,
    ...(lease ? { lease } : {}),
    ...(kmsMetrics ? { kmsMetrics } : {}),
  };
}

/**
 * The keystore under its KEK: a KMS (VEIL_KMS, kms-from-env.ts), whose lease starts renewing
 * here, or the master key (VEIL_MASTER_KEY; outside production a development key file). With a
 * KMS, a master key given too only reads a keystore still in the master-key format.
 */
export async function openKeystore(
  options: Pick<OpenEngineOptions, 'dataDir' | 'env' | 'now' | 'notice' | 'control'>,
): Promise<{ keystore: LocalKeystore; lease?: KeyLease; kmsMetrics?: KmsMetrics }> {
  const kek = await kekFromEnv(options.env);
  if (!kek && isProduction(options.env) && options.env[MASTER_KEY_ENV] === undefined) {
    throw new KeystoreError(
      'KEYSTORE_INVALID',
      `VEIL_ENV=production needs ${MASTER_KEY_ENV} or VEIL_KMS: the development master key file is not used in production`,
    );
  }
  let masterKey;
  if (!kek || options.env[MASTER_KEY_ENV] !== undefined) {
    const master = await resolveMasterKey({ dataDir: options.dataDir, env: options.env });
    if (master.source.kind === 'file') options.notice?.(describeMasterKeySource(master.source));
    masterKey = master.key;
  }
  const kekParts = { ...(masterKey ? { masterKey } : {}), ...(kek ? { kms: kek.kms } : {}) };
  await options.control?.settle((document) => opensUnder(document, kekParts));
  const keystore = await LocalKeystore.open({ dataDir: options.dataDir, now: options.now, ...kekParts });
  await options.control?.attach({ keystore });
  if (!kek) return { keystore };
  options.notice?.(`keys wrapped by ${kek.kms.description}; usable for ${kek.ttlMs / 1000} s without it answering`);
  const lease = new KeyLease({
    // its changes are logged by each long-running process on its own log (logKekTransitions)
    kms: kek.direct,
    wrapped: () => keystore.wrappedDataKey(),
    ttlMs: kek.ttlMs,
  }).start();
  keystore.useLease(lease);
  return { keystore, lease, kmsMetrics: kek.metrics };
}

/**
 * Liveness from the KEK's lease: failing with the code and the KMS's last answer once keys are
 * refused. Which KMS and key it is stays in the process's log: /healthz is often unauthenticated.
 */
/**
 * How a followed version becomes an engine (ActiveVersionWatch): its file compiled, its keys
 * required of the keystore — re-read first when it lacks one, since the publishing process may
 * have created it after this process last read the key set.
 */
export function versionBuilder(keystore: LocalKeystore): VersionBuilder<VeilConfig> {
  return async (file) => {
    const { config } = await requireConfig(file);
    if (findKeyGaps(config.engine, keystore).length) await keystore.reload();
    requireKeys(config.engine, keystore);
    return { engine: new Engine({ config: config.engine, keys: keystore, primitives: nativePrimitives() }), config };
  };
}

export function leaseLiveness(lease: KeyLease | undefined): { healthy: boolean; detail?: Record<string, unknown> } {
  const status = lease?.status();
  if (!status || status.valid) return { healthy: true };
  return { healthy: false, detail: { kek: { code: 'KMS_UNAVAILABLE', reason: status.reason } } };
}
