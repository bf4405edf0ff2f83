import { html, type Html } from '../html.ts';
import type { MetricsSample, PipelineMetrics } from '../pipeline-metrics.ts';
import { formatNumber, sparkline } from './sparkline.ts';

const ROWS: { metric: keyof Omit<MetricsSample, 'at'>; label: string; unit: string; total: boolean }[] = [
  { metric: 'recordsIn', label: 'Records in', unit: 'records/s', total: true },
  { metric: 'recordsOut', label: 'Records out', unit: 'records/s', total: true },
  { metric: 'deadLettered', label: 'Dead-lettered', unit: 'records/s', total: true },
  { metric: 'lag', label: 'Lag', unit: 'records', total: false },
];

const time = (ms: number | undefined) => (ms === undefined ? '' : new Date(ms).toISOString().slice(11, 19));

/**
 * The processor metrics of one pipeline: each processor's state (reachable or unreachable, and
 * why), the writer's schema versions the processors refuse (id and the mapped path each lacks),
 * and per metric a small chart of the last samples with the latest value and the total as
 * text. URLs are shown as origin and path only.
 */
export function pipelineMetricsView(name: string, urls: readonly string[] | undefined, metrics: PipelineMetrics | undefined): Html {
  if (!urls?.length)
    return html`<p class="muted">No processor metrics: this pipeline lists no <code>metricsUrls</code> (the <code>/metrics</code> of its <code>veil stream protect</code> processes).</p>`;
  const series = metrics?.series(name);
  if (!metrics || !series) return html`<p class="muted">Processor metrics: not scraped yet.</p>`;
  const totals = (metric: 'recordsIn' | 'recordsOut' | 'deadLettered') => {
    const reached = series.sources.filter((s) => s.state === 'reachable' && s.totals);
    return reached.length ? reached.reduce((sum, s) => sum + (s.totals![metric] ?? 0), 0) : null;
  };
  const seconds = Math.round(metrics.intervalMs / 1000);
  // schema versions a processor refuses, once each (several processors report the same ones)
  const refused = [...new Map(series.sources.flatMap((s) => s.refused ?? []).map((r) => [`${r.schema}\u0000${r.path}`, r])).values()];
  return html`<h3>Processor metrics</h3>
<ul class="sources">${series.sources.map(
    (s) =>
      html`<li><code>${s.url}</code>: ${
        s.state === 'unreachable'
          ? html`<strong class="error">unreachable</strong> (${s.reason ?? 'unknown'})${s.lastOkAt ? html`, last reached at ${time(s.lastOkAt)} UTC` : ''}`
          : s.state === 'reachable'
            ? html`<span class="ok">reachable</span>, scraped at ${time(s.lastOkAt)} UTC`
            : html`<span class="muted">not scraped yet</span>`
      }</li>`,
  )}</ul>
${
  refused.length
    ? html`<p><strong class="error">Schema versions refused</strong> (a mapped path the writer's schema lacks: their records are dead-lettered <code>SCHEMA_PATH_UNKNOWN</code>):</p>
<ul class="refused">${refused.map((r) => html`<li>schema <code>${r.schema}</code>: no field at <code>${r.path}</code></li>`)}</ul>`
    : ''
}
<div class="scroll"><table class="metrics"><caption class="muted">The last ${series.samples.length} of at most ${metrics.keep} samples, one every ${seconds} s; rates are per second between two samples, summed over the reachable processors.</caption>
<thead><tr><th scope="col">Metric</th><th scope="col">Chart</th><th scope="col">Latest</th><th scope="col">Total (records)</th></tr></thead>
<tbody>${ROWS.map((row) => {
    const values = series.samples.map((s) => s[row.metric]);
    const latest = values.length ? values[values.length - 1] : null;
    return html`<tr><th scope="row">${row.label} <span class="muted">(${row.unit})</span></th><td>${sparkline(`${name}: ${row.label.toLowerCase()}, ${row.unit}`, values, row.unit)}</td>
<td class="num">${formatNumber(latest)}</td><td class="num">${row.total ? formatNumber(totals(row.metric as 'recordsIn')) : html`<span class="muted">–</span>`}</td></tr>`;
  })}</tbody></table></div>`;
}
