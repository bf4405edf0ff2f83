import type { Engine } from '../engine/index.ts';

/**
 * Where a route gets the engine, read once per call: the admin portal's publish swaps the engine
 * of a running service, and a call keeps the engine it started on until it finishes.
 */
export interface EngineSource {
  current(): Engine;
}

/** An Engine as a fixed source, or the source given. */
export function engineSource(engine: Engine | EngineSource): EngineSource {
  return 'current' in engine ? engine : { current: () => engine };
}
