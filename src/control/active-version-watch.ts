import { stat } from 'node:fs/promises';
import type { Engine, VeilError } from '../engine/index.ts';
import type { LocalKeystore } from '../keystore/index.ts';
import type { ConfigVersions } from './config-versions.ts';
import type { EngineHolder } from './engine-holder.ts';

/** Builds the engine of a version's file (the wiring's compiler of a whole configuration); throws when it cannot run here. */
export type VersionBuilder<C> = (file: string) => Promise<{ engine: Engine; config: C }>;

export interface ActiveVersionWatchOptions<C> {
  versions: ConfigVersions;
  keystore: LocalKeystore;
  holder: EngineHolder<C>;
  build: VersionBuilder<C>;
  /** how often the data dir is looked at (default 1000 ms) */
  intervalMs?: number;
  /** a version that cannot be run: the old engine stays; said once per version, never with a value */
  onError?: (version: number, error: VeilError | Error) => void;
  onSwap?: (version: number) => void;
  /** the keystore was re-read (a key created or rotated elsewhere): for engines this watch does not build */
  onKeys?: () => void;
  /** throws when a version may not run here (one from a shared store that does not verify) */
  admit?: (version: number) => Promise<void>;
}

/** What identifies a file's content cheaply: writes replace the file (a rename), so the inode changes. */
const fingerprint = async (file: string): Promise<string> => {
  try {
    const s = await stat(file);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return 'absent';
  }
};

/**
 * Makes a serving process follow the active version other processes publish into the shared data
 * dir (`veil serve --workers N`: a publish is served by one worker; several `veil serve` processes
 * on one data dir). Every `intervalMs` it stats `config-versions/index.json` and `keystore.json`;
 * when the keystore changed it is re-read (a key created or rotated elsewhere), and when the active
 * version is not the one running, that version is built into an engine and swapped in. Calls in
 * flight keep the engine they read; a version that cannot be built (a key missing here) leaves
 * the running one in place and is tried again when either file changes.
 */
export class ActiveVersionWatch<C> {
  private readonly options: ActiveVersionWatchOptions<C>;
  private timer: NodeJS.Timeout | undefined;
  private seenIndex = '';
  private seenKeystore = '';
  private reported = 0;
  private running: Promise<void> | undefined;

  constructor(options: ActiveVersionWatchOptions<C>) {
    this.options = options;
  }

  /** Starts polling; the first look re-reads both files (another process may have published while this one started). */
  start(): void {
    this.timer = setInterval(() => void this.check(), this.options.intervalMs ?? 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One look at the data dir; overlapping looks share one run. */
  check(): Promise<void> {
    this.running ??= this.look().finally(() => (this.running = undefined));
    return this.running;
  }

  private async look(): Promise<void> {
    const { versions, keystore, holder } = this.options;
    const keystoreNow = await fingerprint(keystore.path);
    const indexNow = await fingerprint(versions.indexFile);
    if (keystoreNow === this.seenKeystore && indexNow === this.seenIndex) return;
    let target = holder.get().version;
    try {
      if (keystoreNow !== this.seenKeystore) {
        await keystore.reload();
        this.options.onKeys?.();
      }
      this.seenKeystore = keystoreNow;
      await versions.reload();
      this.seenIndex = indexNow;
      target = versions.active();
      const running = holder.get();
      if (!target || target === running.version) return;
      await this.options.admit?.(target);
      const { engine, config } = await this.options.build(versions.file(target));
      if (holder.swapIf(running, { engine, config, version: target })) this.options.onSwap?.(target);
      this.reported = 0;
    } catch (e) {
      // the running engine stays; said once per version, tried again when the data dir changes
      if (target !== this.reported) this.options.onError?.(target, e as Error);
      this.reported = target;
    }
  }
}
