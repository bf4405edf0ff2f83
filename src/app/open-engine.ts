import { Engine } from '../engine/engine.ts';
import type { ConfigIssue } from '../engine/config/issues.ts';
import { LocalKeystore } from '../keystore/local-keystore.ts';
import { describeMasterKeySource, resolveMasterKey } from '../keystore/master-key.ts';
import { requireConfig } from './config-file.ts';
import { provisionKeys, requireKeys } from './config-keys.ts';

export interface OpenEngineOptions {
  configFile: string;
  dataDir: string;
  env: Readonly<Record<string, string | undefined>>;
  now: () => Date;
  /** create missing keys (development and demo only) */
  provision?: boolean;
  /** where to say which master key is used and what was provisioned */
  notice?: (line: string) => void;
}

export interface OpenedEngine {
  engine: Engine;
  keystore: LocalKeystore;
  warnings: ConfigIssue[];
}

/** Wires the embedded defaults: config file + local keystore → engine. */
export async function openEngine(options: OpenEngineOptions): Promise<OpenedEngine> {
  const { config, warnings } = await requireConfig(options.configFile);
  const master = await resolveMasterKey({ dataDir: options.dataDir, env: options.env });
  if (master.source.kind === 'file') options.notice?.(describeMasterKeySource(master.source));
  const keystore = await LocalKeystore.open({ dataDir: options.dataDir, masterKey: master.key, now: options.now });
  if (options.provision) {
    const created = await provisionKeys(config, keystore);
    if (created.length) options.notice?.(`created keys ${created.join(', ')} in ${keystore.path}`);
  }
  requireKeys(config, keystore);
  return { engine: new Engine({ config, keys: keystore }), keystore, warnings };
}
