import { SCHEMA_REFUSALS_MAX } from '../../observability/index.ts';
import type { StreamMetrics } from './stream-metrics.ts';
import type { StreamLog } from '../log.ts';

/** A writer's schema version a pipeline refuses: its id and the mapped path it lacks (SCHEMA_PATH_UNKNOWN). */
export interface RefusedSchema {
  schemaId: number;
  path: string;
}

type Log = Pick<StreamLog, 'warn'>;

/**
 * The schema versions one pipeline refuses because they lack a mapped path: each dead letter is
 * counted (veil_stream_schema_refused_total{pipeline, schema, path}), each schema id is logged
 * once (a warning naming the pipeline, the id and the path — never a value), and the list is
 * what /healthz and the portal show. Bounded: at most SCHEMA_REFUSALS_MAX schema ids are kept
 * and labelled; further ones count under the schema `(other)`. A configuration change clears the
 * list (the new mapping may fit those schemas).
 */
export class SchemaRefusals {
  private readonly refused = new Map<number, string>();
  private readonly pipeline: string;
  private readonly metrics: StreamMetrics;
  private readonly log: Log;

  constructor(pipeline: string, metrics: StreamMetrics, log: Log) {
    this.pipeline = pipeline;
    this.metrics = metrics;
    this.log = log;
  }

  /** `n` records of `schemaId` dead-lettered for lacking `path` */
  count(schemaId: number | undefined, path: string | undefined, n: number): void {
    const p = path ?? '(unknown)';
    const known = schemaId !== undefined && (this.refused.has(schemaId) || this.refused.size < SCHEMA_REFUSALS_MAX);
    this.metrics.schemaRefused.inc({ pipeline: this.pipeline, schema: known ? String(schemaId) : '(other)', path: p }, n);
    if (!known || this.refused.has(schemaId)) return;
    this.refused.set(schemaId, p);
    this.log.warn(
      { pipeline: this.pipeline, schemaId, path: p, code: 'SCHEMA_PATH_UNKNOWN' },
      "a schema version lacks a mapped path: the pipeline refuses its records (fix the mapping, or the producer's schema)",
    );
  }

  list(): RefusedSchema[] {
    return [...this.refused].map(([schemaId, path]) => ({ schemaId, path }));
  }

  clear(): void {
    this.refused.clear();
  }
}
