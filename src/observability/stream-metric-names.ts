/**
 * The names of the stream metrics the admin portal charts (records in / out / dead-lettered, lag):
 * one home, so `StreamMetrics` exports what the portal's scraper reads. All carry a `pipeline` label.
 */
export const STREAM_METRIC_NAMES = {
  recordsIn: 'veil_stream_records_in_total',
  recordsOut: 'veil_stream_records_out_total',
  deadLettered: 'veil_stream_records_dead_lettered_total',
  lag: 'veil_stream_consumer_lag',
} as const;

export type ChartedStreamMetric = keyof typeof STREAM_METRIC_NAMES;

/**
 * The unmapped guard's findings (labels pipeline, path, kind; never a value): the portal's
 * Pipelines page lists them and turns them into a draft mapping. Paths per pipeline are bounded
 * (UNMAPPED_PATHS_MAX); further ones are counted under the path `(other)`.
 */
export const UNMAPPED_FINDINGS_METRIC = 'veil_stream_unmapped_findings_total';
/** the same in the guard's report mode (`unmapped: report`): records passed that the guard would have dead-lettered */
export const UNMAPPED_REPORTED_METRIC = 'veil_stream_unmapped_reported_total';
export const UNMAPPED_PATHS_MAX = 100;
export const OTHER_PATH = '(other)';

/**
 * Records dead-lettered because their writer's schema lacks a mapped path (SCHEMA_PATH_UNKNOWN),
 * labels pipeline, schema (the writer's schema id) and path: the portal's Pipelines page lists the
 * refused schema versions. At most SCHEMA_REFUSALS_MAX schema ids per pipeline; further ones are
 * counted under the schema `(other)`.
 */
export const SCHEMA_REFUSED_METRIC = 'veil_stream_schema_refused_total';
export const SCHEMA_REFUSALS_MAX = 100;
