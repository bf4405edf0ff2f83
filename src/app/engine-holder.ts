import type { Engine } from '../engine/index.ts';
import type { EngineSource } from '../http/engine-source.ts';
import type { VeilConfig } from './config-file.ts';

export interface ActiveConfig {
  engine: Engine;
  config: VeilConfig;
  /** the published version number in the data dir's config-versions */
  version: number;
}

/**
 * The running service's engine and the configuration it was built from. Routes read `current()`
 * once per call; `swap` (a publish in the admin portal) changes what later calls get, while calls
 * already running finish on the engine they read.
 */
export class EngineHolder implements EngineSource {
  private active: ActiveConfig;

  constructor(initial: ActiveConfig) {
    this.active = initial;
  }

  current(): Engine {
    return this.active.engine;
  }

  get(): ActiveConfig {
    return this.active;
  }

  swap(next: ActiveConfig): void {
    this.active = next;
  }

  /**
   * Swaps only if the active configuration is still `expected`: a version picked up from the data
   * dir (built asynchronously) never replaces one a publish swapped in meanwhile.
   */
  swapIf(expected: ActiveConfig, next: ActiveConfig): boolean {
    if (this.active !== expected) return false;
    this.active = next;
    return true;
  }
}
