import type { Logger } from 'pino';
import { ConfigVersions } from '../control/config-versions.ts';
import { EngineHolder } from '../control/engine-holder.ts';
import { ActiveVersionWatch } from './active-version-watch.ts';
import { compileVeilConfigText, type VeilConfig } from './config-file.ts';
import { openControlStore, type ControlStore } from './control-store.ts';
import { openEngine, type OpenedEngine, type OpenEngineOptions } from './open-engine.ts';

export interface ActiveEngine extends OpenedEngine {
  /** the shared control store, when VEIL_CONTROL_STORE names one (the data dir is its mirror) */
  control?: ControlStore;
  versions: ConfigVersions;
  /** the running version: its engine, its whole configuration, its number */
  holder: EngineHolder<VeilConfig>;
  /** the running version's file in the data dir */
  file(version: number): string;
  /**
   * Follows what other processes publish (ActiveVersionWatch): a new active version is built and
   * swapped into `holder`, then `onSwap` says which; a key created or rotated elsewhere is re-read,
   * then `onKeys`. Stopped by close().
   */
  follow(options: { logger: Logger; intervalMs?: number; onSwap?: (version: number) => void; onKeys?: () => void }): void;
  /** stops following, the KEK's lease and the control store's consumer */
  close(): Promise<void>;
}

/**
 * How every long-running veil process gets its configuration: the shared control store first
 * (VEIL_CONTROL_STORE; it fills the data dir), then the configuration file adopted as a published
 * version when its text changed (ConfigVersions.adopt), then the engine of the active version —
 * which may be one a portal published since. The process then follows the store (follow()).
 */
export async function openActiveEngine(options: Omit<OpenEngineOptions, 'control'>): Promise<ActiveEngine> {
  const control = await openControlStore(options.env, options.dataDir);
  if (control) options.notice?.(`control store: ${control.description}`);
  try {
    const versions = await ConfigVersions.open(options.dataDir);
    control?.attach({ versions });
    const active = await versions.adopt(options.configFile, options.now(), compileVeilConfigText);
    options.notice?.(active.adopted
      ? `configuration ${options.configFile} published as version ${active.number} (${active.file})`
      : `configuration: active version ${active.number} (${active.file}); ${options.configFile} is unchanged since it was adopted`);
    const opened = await openEngine({ ...options, configFile: active.file, ...(control ? { control } : {}) });
    const holder = new EngineHolder<VeilConfig>({ engine: opened.engine, config: opened.config, version: active.number });
    let watch: ActiveVersionWatch | undefined;
    return {
      ...opened, versions, holder, ...(control ? { control } : {}),
      file: (version) => versions.file(version),
      follow({ logger, intervalMs, onSwap, onKeys }) {
        watch = new ActiveVersionWatch({
          versions, keystore: opened.keystore, holder, intervalMs: intervalMs ?? 1000,
          onSwap: (version) => {
            logger.info({ version }, 'configuration: now running the active version');
            onSwap?.(version);
          },
          ...(onKeys ? { onKeys } : {}),
          onError: (version, e) => logger.error({ version, code: (e as { code?: string }).code ?? e.name, reason: e.message }, 'configuration: the active version cannot run in this process; the previous one stays'),
        });
        watch.start();
      },
      async close() {
        await watch?.stop();
        opened.lease?.stop();
        await control?.close();
      },
    };
  } catch (e) {
    // a process that does not start leaves the control store's consumer behind otherwise
    await control?.close();
    throw e;
  }
}
