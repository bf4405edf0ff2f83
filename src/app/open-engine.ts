import { Engine, VeilError, type ConfigIssue } from '../engine/index.ts';
import { LocalKeystore } from '../keystore/local-keystore.ts';
import { MASTER_KEY_ENV, describeMasterKeySource, resolveMasterKey } from '../keystore/master-key.ts';
import { requireConfig, type VeilConfig } from './config-file.ts';
import { provisionKeys, requireKeys } from './config-keys.ts';

export type Env = Readonly<Record<string, string | undefined>>;

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
}

export interface OpenedEngine {
  config: VeilConfig;
  engine: Engine;
  keystore: LocalKeystore;
  warnings: ConfigIssue[];
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
  if (isProduction(options.env) && options.env[MASTER_KEY_ENV] === undefined) {
    throw new VeilError('KEYSTORE_INVALID', `VEIL_ENV=production needs ${MASTER_KEY_ENV}: the development master key file is not used in production`);
  }
  const master = await resolveMasterKey({ dataDir: options.dataDir, env: options.env });
  if (master.source.kind === 'file') options.notice?.(describeMasterKeySource(master.source));
  const keystore = await LocalKeystore.open({ dataDir: options.dataDir, masterKey: master.key, now: options.now });
  if (options.provision) {
    const created = await provisionKeys(config.engine, keystore);
    if (created.length) options.notice?.(`created keys ${created.join(', ')} in ${keystore.path}`);
  }
  requireKeys(config.engine, keystore);
  return { config, engine: new Engine({ config: config.engine, keys: keystore }), keystore, warnings };
}
