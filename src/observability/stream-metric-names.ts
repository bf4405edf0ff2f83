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
