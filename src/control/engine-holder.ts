import type { Engine } from '../engine/index.ts';

/** `C`: the composed configuration (the wiring's VeilConfig; the portal reads it through config-port.ts) */
export interface ActiveConfig<C> {
  engine: Engine;
  config: C;
  /** the published version number in the data dir's config-versions */
  version: number;
}

/**
 * The running service's engine and the configuration it was built from. Routes read `current()`
 * once per call; `swap` (a publish in the admin portal) changes what later calls get, while calls
 * already running finish on the engine they read. It is src/http's EngineSource (structurally:
 * src/control imports no adapter).
 */
export class EngineHolder<C> {
  private active: ActiveConfig<C>;

  constructor(initial: ActiveConfig<C>) {
    this.active = initial;
  }

  current(): Engine {
    return this.active.engine;
  }

  get(): ActiveConfig<C> {
    return this.active;
  }

  swap(next: ActiveConfig<C>): void {
    this.active = next;
  }

  /**
   * Swaps only if the active configuration is still `expected`: a version picked up from the data
   * dir (built asynchronously) never replaces one a publish swapped in meanwhile.
   */
  swapIf(expected: ActiveConfig<C>, next: ActiveConfig<C>): boolean {
    if (this.active !== expected) return false;
    this.active = next;
    return true;
  }
}
