import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import {
  collectProcessMetrics,
  OTHER_PATH,
  SCHEMA_REFUSED_METRIC,
  STREAM_METRIC_NAMES as NAMES,
  UNMAPPED_FINDINGS_METRIC,
  UNMAPPED_PATHS_MAX,
  UNMAPPED_REPORTED_METRIC,
} from '../../observability/index.ts';

/** Stream metrics: labels are pipeline, topic, partition and error code — never values. */
export class StreamMetrics {
  readonly registry = new Registry();
  readonly recordsIn = new Counter({
    name: NAMES.recordsIn,
    help: 'Records read from raw topics',
    labelNames: ['pipeline'] as const,
    registers: [this.registry],
  });
  readonly recordsOut = new Counter({
    name: NAMES.recordsOut,
    help: 'Protected records written to clean topics',
    labelNames: ['pipeline'] as const,
    registers: [this.registry],
  });
  readonly deadLettered = new Counter({
    name: NAMES.deadLettered,
    help: 'Records sent to the dead-letter topic',
    labelNames: ['pipeline', 'code'] as const,
    registers: [this.registry],
  });
  readonly unmapped = new Counter({
    name: UNMAPPED_FINDINGS_METRIC,
    help: 'Records dead-lettered by the unmapped guard (personal data at a path the mapping does not name), by the path and kind found first (never the value)',
    labelNames: ['pipeline', 'path', 'kind'] as const,
    registers: [this.registry],
  });
  readonly unmappedReported = new Counter({
    name: UNMAPPED_REPORTED_METRIC,
    help: 'Records the unmapped guard passed in report mode that it would have dead-lettered, by the path and kind found first (never the value)',
    labelNames: ['pipeline', 'path', 'kind'] as const,
    registers: [this.registry],
  });
  /** the paths each pipeline has counted findings under, bounded: a producer's field names must not grow the series without end */
  private readonly unmappedPaths = new Map<string, Set<string>>();
  readonly schemaRefused = new Counter({
    name: SCHEMA_REFUSED_METRIC,
    help: "Records dead-lettered because their writer's schema lacks a mapped path (SCHEMA_PATH_UNKNOWN), by schema id and path",
    labelNames: ['pipeline', 'schema', 'path'] as const,
    registers: [this.registry],
  });
  readonly erasedKept = new Counter({
    name: 'veil_stream_rewrap_erased_values_total',
    help: 'Values of erased data subjects a rewrap carried through unchanged (unreadable, as before)',
    labelNames: ['pipeline'] as const,
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'veil_stream_batch_retries_total',
    help: 'Batches aborted for a retriable failure and read again',
    labelNames: ['pipeline'] as const,
    registers: [this.registry],
  });
  readonly recoveries = new Counter({
    name: 'veil_stream_recoveries_total',
    help: 'Times a stalled or crashed consumer was re-created with its producers',
    labelNames: ['pipeline'] as const,
    registers: [this.registry],
  });
  readonly batchLatency = new Histogram({
    name: 'veil_stream_batch_duration_seconds',
    help: 'Time to protect and commit one batch',
    labelNames: ['pipeline'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly lag = new Gauge({
    name: NAMES.lag,
    help: "High watermark minus the group's committed offset, after each batch and once caught up (past transaction markers): 0 when every record was processed",
    labelNames: ['pipeline', 'topic', 'partition'] as const,
    registers: [this.registry],
  });

  /** the lag series each pipeline has set, so a rebalance can drop those of partitions it lost */
  private readonly lagSeries = new Map<string, Set<string>>();

  constructor() {
    collectProcessMetrics(this.registry);
  }

  /** `n` records of `pipeline` dead-lettered (or, `reported`, passed in report mode) for personal data of `kind` at `path` */
  countUnmapped(pipeline: string, path: string, kind: string, n: number, reported = false): void {
    let paths = this.unmappedPaths.get(pipeline);
    if (paths === undefined) this.unmappedPaths.set(pipeline, (paths = new Set()));
    if (!paths.has(path) && paths.size < UNMAPPED_PATHS_MAX) paths.add(path);
    (reported ? this.unmappedReported : this.unmapped).inc({ pipeline, path: paths.has(path) ? path : OTHER_PATH, kind }, n);
  }

  setLag(pipeline: string, topic: string, partition: number, lag: number): void {
    this.lag.set({ pipeline, topic, partition: String(partition) }, lag);
    const series = this.lagSeries.get(pipeline) ?? new Set<string>();
    series.add(JSON.stringify([topic, partition]));
    this.lagSeries.set(pipeline, series);
  }

  /**
   * After a rebalance: a partition this process no longer owns is reported by its new owner, so
   * its old gauge would count the lag twice in a sum over processes.
   */
  keepLagOf(pipeline: string, owned: Readonly<Record<string, readonly number[]>>): void {
    const series = this.lagSeries.get(pipeline);
    if (!series) return;
    for (const key of [...series]) {
      const [topic, partition] = JSON.parse(key) as [string, number];
      if (owned[topic]?.includes(partition)) continue;
      this.lag.remove({ pipeline, topic, partition: String(partition) });
      series.delete(key);
    }
  }
}
