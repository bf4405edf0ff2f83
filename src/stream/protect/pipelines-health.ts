import type { LivenessStatus, ReadinessStatus } from './liveness.ts';
import type { RefusedSchema } from './schema-refusals.ts';

/** what a process's health is made of: each pipeline's, and the process's own (the KEK's lease, the control store) */
export interface PipelineHealthSource {
  readonly name: string;
  health(): LivenessStatus;
  readiness(): ReadinessStatus;
  refusedSchemas(): RefusedSchema[];
}

export interface SharedLiveness {
  healthy: boolean;
  detail?: Record<string, unknown>;
  info: Record<string, unknown>;
}

/**
 * A stream process's /healthz: liveness is what a restart fixes (a halted pipeline, a batch stuck
 * while Kafka answers); a Kafka (or registry) that does not answer turns /readyz red instead, and
 * shows here as `notReady`. Schema versions a pipeline refuses (a mapped path they lack) are shown,
 * healthy or not: the pipeline progresses. Reasons and codes only, never a value.
 */
export function pipelinesLiveness(
  pipelines: readonly PipelineHealthSource[],
  shared: SharedLiveness,
): { healthy: boolean; info?: Record<string, unknown>; detail?: Record<string, unknown> } {
  const failing = pipelines
    .map((p) => ({ pipeline: p.name, ...p.health() }))
    .filter((h) => !h.healthy)
    .map(({ pipeline, reason }) => ({ pipeline, reason }));
  const refused = pipelines.flatMap((p) => p.refusedSchemas().map((r) => ({ pipeline: p.name, ...r })));
  const notReady = pipelines
    .map((p) => ({ pipeline: p.name, ...p.readiness() }))
    .filter((r) => !r.ready)
    .map(({ pipeline, reason }) => ({ pipeline, reason }));
  const info = { ...shared.info, ...(refused.length ? { refusedSchemas: refused } : {}), ...(notReady.length ? { notReady } : {}) };
  if (!failing.length && shared.healthy) return { healthy: true, info };
  return { healthy: false, detail: { ...(failing.length ? { pipelines: failing } : {}), ...shared.detail, ...info } };
}
