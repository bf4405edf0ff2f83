import type { Logger } from 'pino';
import {
  ActiveVersionWatch,
  CONTROL_MAC_KEY,
  ConfigVersions,
  EngineHolder,
  ensureControlKey,
  openControlStore,
  versionIsAuthentic,
  type ControlStore,
} from '../control/index.ts';
import { compileVeilConfigText, type VeilConfig } from './config-file.ts';
import { VeilError } from '../engine/index.ts';
import { leaseLiveness, openEngine, openKeystore, versionBuilder, type OpenedEngine, type OpenEngineOptions } from './open-engine.ts';

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
  /**
   * Liveness beyond "the process answers": red once the KEK's lease lapsed (KMS_UNAVAILABLE) or
   * the control store is no longer followed (CONTROL_STORE_UNAVAILABLE), with codes and reasons
   * only — which KMS, key or brokers stays in the log: /healthz is often unauthenticated.
   */
  liveness(): { healthy: boolean; detail?: Record<string, unknown>; info: { configuration: { version: number; hash: string } } };
  /** stops following, the KEK's lease and the control store's consumer */
  close(): Promise<void>;
  /** `make`'s result; when it throws (a start refused), this is closed first, so a process that does not start leaves nothing running */
  orClose<T>(make: () => T | Promise<T>): Promise<T>;
}

/**
 * How every long-running veil process gets its configuration: the shared control store first
 * (VEIL_CONTROL_STORE; it fills the data dir), then the configuration file adopted as a published
 * version when its text changed (ConfigVersions.adopt), then the engine of the active version —
 * which may be one a portal published since. The process then follows the store (follow()).
 * With a shared store, every configuration version is authenticated: published with a MAC under
 * the key set's control key (created here when the key set has none), and run only when it
 * verifies — whoever can write to the topic without the key set cannot make a process run a
 * configuration of theirs (the active version at start failing is CONFIG_INVALID; one arriving
 * later is not swapped in).
 */
export async function openActiveEngine(options: Omit<OpenEngineOptions, 'control'>): Promise<ActiveEngine> {
  const control = await openControlStore(options.env, options.dataDir, options.notice);
  if (control) options.notice?.(`control store: ${control.description}`);
  let lease: OpenedEngine['lease'];
  try {
    const keys = await openKeystore({ ...options, ...(control ? { control } : {}) });
    lease = keys.lease;
    if (control) await ensureControlKey(keys.keystore);
    const versions = await ConfigVersions.open(options.dataDir);
    await control?.attach({ versions });
    const active = await adoptConfigFile(versions, options);
    const admit = control ? authenticatedVersions(versions, keys.keystore) : undefined;
    await admit?.(active.number);
    const opened = await openEngine({ ...options, configFile: active.file, opened: keys, ...(control ? { control } : {}) });
    const holder = new EngineHolder<VeilConfig>({ engine: opened.engine, config: opened.config, version: active.number });
    return activeEngine({ opened, versions, holder, ...(control ? { control } : {}), ...(admit ? { admit } : {}) });
  } catch (e) {
    // a process that does not start leaves the KEK's lease and the control store's consumer behind otherwise
    lease?.stop();
    await control?.close();
    throw e;
  }
}

/** the configuration file published as a version when its text changed; the notice says which version runs */
async function adoptConfigFile(versions: ConfigVersions, options: Omit<OpenEngineOptions, 'control'>): Promise<{ file: string; number: number }> {
  const active = await versions.adopt(options.configFile, options.now(), compileVeilConfigText);
  options.notice?.(
    active.adopted
      ? `configuration ${options.configFile} published as version ${active.number} (${active.file})`
      : `configuration: active version ${active.number} (${active.file}); ${options.configFile} is unchanged since it was adopted`,
  );
  return active;
}

/** with a shared store: a version runs only when its MAC verifies under the key set's control key, else CONFIG_INVALID */
function authenticatedVersions(versions: ConfigVersions, keystore: OpenedEngine['keystore']): (version: number) => Promise<void> {
  return async (version) => {
    if (!(await versionIsAuthentic(versions, version, keystore)))
      throw new VeilError(
        'CONFIG_INVALID',
        `configuration version ${version} of the control store is not authenticated by the key set (${CONTROL_MAC_KEY}): it is not run`,
      );
  };
}

/** what openActiveEngine put together, before it is an ActiveEngine */
interface ActiveParts {
  opened: OpenedEngine;
  versions: ConfigVersions;
  holder: EngineHolder<VeilConfig>;
  control?: ControlStore;
  /** the check a version passes before it runs (authenticatedVersions), with a shared store */
  admit?: (version: number) => Promise<void>;
}

function activeEngine({ opened, versions, holder, control, admit }: ActiveParts): ActiveEngine {
  let watch: ActiveVersionWatch<VeilConfig> | undefined;
  const engine: ActiveEngine = {
    ...opened,
    versions,
    holder,
    ...(control ? { control } : {}),
    file: (version) => versions.file(version),
    follow({ logger, intervalMs, onSwap, onKeys }) {
      watch = new ActiveVersionWatch({
        versions,
        keystore: opened.keystore,
        holder,
        build: versionBuilder(opened.keystore),
        intervalMs: intervalMs ?? 1000,
        ...(admit ? { admit } : {}),
        onSwap: (version) => {
          logger.info({ version }, 'configuration: now running the active version');
          onSwap?.(version);
        },
        ...(onKeys ? { onKeys } : {}),
        onError: (version, e) =>
          logger.error(
            { version, code: (e as { code?: string }).code ?? e.name, reason: e.message },
            'configuration: the active version cannot run in this process; the previous one stays',
          ),
      });
      watch.start();
    },
    liveness: () => activeLiveness(opened.lease, control, holder),
    async close() {
      await watch?.stop();
      opened.lease?.stop();
      await control?.close();
    },
    async orClose(make) {
      try {
        return await make();
      } catch (e) {
        await engine.close();
        throw e;
      }
    },
  };
  return engine;
}

/** ActiveEngine.liveness: the KEK's lease and the control store's following, with the running version's number and hash */
function activeLiveness(
  lease: OpenedEngine['lease'],
  control: ControlStore | undefined,
  holder: EngineHolder<VeilConfig>,
): ReturnType<ActiveEngine['liveness']> {
  const kek = leaseLiveness(lease);
  const store = control?.status() ?? { following: true };
  // the running version's number and hash, healthy or not (veil.config.version carries the hash)
  const running = holder.get();
  const info = { configuration: { version: running.version, hash: running.config.version } };
  if (kek.healthy && store.following) return { healthy: true, info };
  return {
    healthy: false,
    info,
    detail: {
      ...kek.detail,
      ...(store.following ? {} : { controlStore: { code: 'CONTROL_STORE_UNAVAILABLE', reason: store.reason ?? 'the control store is no longer followed' } }),
      ...info,
    },
  };
}
