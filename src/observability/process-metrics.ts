import { Gauge, collectDefaultMetrics, type Registry } from 'prom-client';

/**
 * The process and Node.js runtime metrics of a process's /metrics (serve, gateway, stream,
 * unprotect): prom-client's default metrics under their standard, unprefixed names
 * (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `nodejs_heap_size_used_bytes`,
 * `nodejs_eventloop_lag_seconds`, `nodejs_gc_duration_seconds`, …), so that the usual Node.js
 * dashboards and alerts find them. A scrape's `job` and `instance` labels tell the processes
 * apart; veil's own metrics keep their `veil_…` names.
 *
 * The gauges prom-client names with `_total` (`nodejs_active_handles_total`,
 * `nodejs_active_requests_total`, `nodejs_active_resources_total`) are left out: OpenMetrics
 * reserves `_total` for counters, and the suffix-less names are already taken by the gauges by
 * `type`, whose sum they are — `sum without (type) (nodejs_active_handles)` gives the same number.
 */
export function collectProcessMetrics(registry: Registry): void {
  const before = new Set(registry.getMetricsAsArray().map((m) => m.name));
  collectDefaultMetrics({ register: registry });
  for (const metric of registry.getMetricsAsArray()) {
    // only the default metrics just added: a gauge of veil's own is its author's to name
    if (!before.has(metric.name) && metric instanceof Gauge && metric.name.endsWith('_total')) registry.removeSingleMetric(metric.name);
  }
}
