import {
  SCHEMA_REFUSED_METRIC,
  STREAM_METRIC_NAMES,
  UNMAPPED_FINDINGS_METRIC,
  UNMAPPED_REPORTED_METRIC,
  type ChartedStreamMetric,
} from '../observability/index.ts';
import type { PipelineView } from './config-port.ts';
import { PortalFault } from './errors.ts';
import { guardedFetch, refusedAddress, refusedHost } from './metrics-address.ts';
import { parsePrometheusText, sumOf, type PromSample } from './prometheus-text.ts';

/** what a scrape reads of a pipeline's section (the portal does not import src/stream) */
type PipelineConfig = Pick<PipelineView, 'metricsUrls'>;

/** What one scrape of one pipeline's processors gave: rates per second (counters) and lag (a gauge). */
export interface MetricsSample {
  at: number;
  /** records per second since the previous scrape, summed over the processors reachable both times */
  recordsIn: number | null;
  recordsOut: number | null;
  deadLettered: number | null;
  /** summed over the reachable processors' partitions, as each last reported it */
  lag: number | null;
}

/** A processor's /metrics as the page may show it: origin and path, never user, password or query. */
export function displayUrl(text: string): string {
  try {
    const url = new URL(text);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return '(not a URL)';
  }
}

export interface SourceState {
  url: string;
  state: 'pending' | 'reachable' | 'unreachable';
  /** why it was unreachable: timeout, refused, HTTP <status>, not Prometheus text, too large */
  reason?: string;
  lastOkAt?: number;
  /** the counters' totals at the last good scrape */
  totals?: Partial<Record<ChartedStreamMetric, number>>;
  /** the writer's schema versions the processor refuses (a mapped path they lack), at the last good scrape */
  refused?: readonly { schema: string; path: string }[];
  /** the unmapped guard's findings of the pipeline at the last good scrape (the largest FINDINGS_KEPT) */
  findings?: readonly UnmappedFinding[];
  /** (path, kind) pairs the processor reported beyond those kept */
  findingsOmitted?: number;
}

/**
 * One series of `veil_stream_unmapped_findings_total` (UNMAPPED_FINDINGS_METRIC): records
 * dead-lettered for personal data of `kind` at `path`, a path the pipeline's mapping does not
 * name. Path and kind are label values a processor sent: untrusted text, escaped where shown and
 * checked before anything is drafted from them (unmapped-draft.ts).
 */
export interface UnmappedFinding {
  path: string;
  kind: string;
  /** records dead-lettered */
  records: number;
  /** records passed in the guard's report mode (`veil_stream_unmapped_reported_total`) */
  reported?: number;
}

/** The findings kept per processor and per pipeline (a processor names at most 100 paths, each with a few kinds). */
export const FINDINGS_KEPT = 200;
/** a label value longer than this is no path a processor writes: counted as omitted, not kept */
const LABEL_MAX = 1024;

/** largest count first, then by path and kind: the order the page lists them in */
const total = (f: UnmappedFinding) => f.records + (f.reported ?? 0);
const byRecords = (a: UnmappedFinding, b: UnmappedFinding) =>
  total(b) - total(a) || (a.path < b.path ? -1 : a.path > b.path ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0);

/**
 * The unmapped guard's findings of `pipeline` among a scrape's samples (dead-lettered, and
 * passed in report mode): the total per (path, kind), the largest `cap` kept, and how many (path, kind) pairs were left out (beyond the cap,
 * or a label longer than any path). Series of other pipelines, without a path or kind, or with a
 * value that is not a positive finite number are skipped.
 */
export function findingsOf(samples: readonly PromSample[], pipeline: string, cap = FINDINGS_KEPT): { findings: UnmappedFinding[]; omitted: number } {
  const findings: UnmappedFinding[] = [];
  let omitted = 0;
  for (const s of samples) {
    const reported = s.name === UNMAPPED_REPORTED_METRIC;
    if ((s.name !== UNMAPPED_FINDINGS_METRIC && !reported) || s.labels.pipeline !== pipeline) continue;
    const { path, kind } = s.labels;
    if (!path || !kind || !Number.isFinite(s.value) || s.value <= 0) continue;
    if (path.length > LABEL_MAX || kind.length > LABEL_MAX) omitted++;
    else findings.push(reported ? { path, kind, records: 0, reported: s.value } : { path, kind, records: s.value });
  }
  // a series repeated (another label beside pipeline, path and kind) adds up
  return sumFindings([{ findings, findingsOmitted: omitted }], cap);
}

/** Findings summed over processors (each its last good scrape), the largest `cap` kept. */
export function sumFindings(
  sources: readonly Pick<SourceState, 'findings' | 'findingsOmitted'>[],
  cap = FINDINGS_KEPT,
): { findings: UnmappedFinding[]; omitted: number } {
  const totals = new Map<string, UnmappedFinding>();
  let omitted = 0;
  for (const source of sources) {
    omitted += source.findingsOmitted ?? 0;
    for (const f of source.findings ?? []) {
      const key = `${f.path}\u0000${f.kind}`;
      const row = totals.get(key);
      if (row) {
        row.records += f.records;
        if (f.reported !== undefined) row.reported = (row.reported ?? 0) + f.reported;
      } else totals.set(key, { ...f });
    }
  }
  const all = [...totals.values()].sort(byRecords);
  return { findings: all.slice(0, cap), omitted: omitted + Math.max(0, all.length - cap) };
}

export interface PipelineSeries {
  samples: readonly MetricsSample[];
  sources: readonly SourceState[];
}

export interface PipelineMetricsOptions {
  /** the active configuration's pipelines, read at every scrape (a publish changes the URLs) */
  pipelines: () => Readonly<Record<string, PipelineConfig>>;
  intervalMs?: number;
  timeoutMs?: number;
  /** samples kept per pipeline */
  keep?: number;
  now?: () => number;
  fetch?: typeof fetch;
  /** hosts that may be link-local or metadata addresses (portal.metricsAllowedHosts); every other such address is refused */
  allowedHosts?: () => readonly string[];
  /** a processor turned reachable or unreachable (the URL already stripped for display) */
  onChange?: (pipeline: string, source: SourceState) => void;
}

const COUNTERS = ['recordsIn', 'recordsOut', 'deadLettered'] as const;
const MAX_BODY = 4 * 1024 * 1024;

interface Source extends SourceState {
  rawUrl: string;
  lastAt?: number;
}

interface Ring {
  key: string;
  samples: MetricsSample[];
  sources: Source[];
}

/** Why a scrape failed, in words that hold neither the URL nor anything the endpoint sent. */
function reasonOf(error: unknown): string {
  // a refused address found by the lookup comes back as the cause of the request's error
  const fault = [error, (error as { cause?: unknown }).cause].find((e): e is PortalFault => e instanceof PortalFault);
  // the scraper's faults' messages are their reasons (SCRAPE_UNUSABLE, METRICS_ADDRESS_REFUSED), but a line number says too much
  if (fault) return fault.code === 'NOT_PROMETHEUS_TEXT' ? 'not Prometheus text' : fault.message;
  const e = error as { name?: string; code?: string; cause?: { code?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timeout';
  const code = e.cause?.code ?? e.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection closed';
  return 'network error';
}

async function readCapped(res: Response): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY) {
      await reader.cancel();
      throw new PortalFault('SCRAPE_UNUSABLE', 'too large');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Scrapes the `metricsUrls` of every configured pipeline (the /metrics of `veil stream protect`)
 * every `intervalMs` with a timeout, and keeps the last `keep` samples per pipeline in memory for
 * the Pipelines page. A processor that cannot be scraped is marked unreachable (the sample gets a
 * gap when none is reachable); nothing here throws, and no URL with its credentials or query is
 * kept for display or passed to `onChange`.
 */
export class PipelineMetrics {
  private readonly options: PipelineMetricsOptions;
  private readonly rings = new Map<string, Ring>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(options: PipelineMetricsOptions) {
    this.options = options;
  }

  get intervalMs(): number {
    return this.options.intervalMs ?? 5000;
  }

  get keep(): number {
    return this.options.keep ?? 60;
  }

  start(): void {
    this.timer = setInterval(() => void this.scrape(), this.intervalMs);
    this.timer.unref();
    void this.scrape();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  series(pipeline: string): PipelineSeries | undefined {
    const ring = this.rings.get(pipeline);
    return (
      ring && {
        samples: ring.samples,
        sources: ring.sources.map(({ url, state, reason, lastOkAt, totals, refused, findings, findingsOmitted }) => ({
          url,
          state,
          ...(reason ? { reason } : {}),
          ...(lastOkAt ? { lastOkAt } : {}),
          ...(totals ? { totals } : {}),
          ...(refused?.length ? { refused } : {}),
          ...(findings?.length ? { findings } : {}),
          ...(findingsOmitted ? { findingsOmitted } : {}),
        })),
      }
    );
  }

  /**
   * The unmapped guard's findings of a pipeline, summed over the processors reachable at their
   * last scrape (each as it last reported: a restarted processor counts from 0), at most
   * FINDINGS_KEPT rows; undefined before the first scrape or for a pipeline without metricsUrls.
   */
  findings(pipeline: string): { findings: UnmappedFinding[]; omitted: number; reachable: number } | undefined {
    const ring = this.rings.get(pipeline);
    if (!ring) return undefined;
    const reached = ring.sources.filter((s) => s.state === 'reachable');
    return { ...sumFindings(reached), reachable: reached.length };
  }

  /** One scrape of every configured processor; overlapping calls share one run. */
  scrape(): Promise<void> {
    this.running ??= this.scrapeAll()
      .catch(() => undefined)
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async scrapeAll(): Promise<void> {
    const pipelines = Object.entries(this.options.pipelines()).filter(([, p]) => p.metricsUrls?.length);
    for (const name of this.rings.keys()) if (!pipelines.some(([n]) => n === name)) this.rings.delete(name);
    await Promise.all(pipelines.map(([name, p]) => this.scrapePipeline(name, p.metricsUrls!)));
  }

  private async scrapePipeline(name: string, urls: readonly string[]): Promise<void> {
    const key = urls.join('\n');
    let ring = this.rings.get(name);
    if (ring?.key !== key) {
      ring = { key, samples: [], sources: urls.map((rawUrl) => ({ rawUrl, url: displayUrl(rawUrl), state: 'pending' })) };
      this.rings.set(name, ring);
    }
    const now = this.options.now ?? Date.now;
    const results = await Promise.all(
      ring.sources.map(async (source) => {
        const previous = source.state;
        const at = now();
        let rates: Partial<Record<ChartedStreamMetric, number>> | undefined;
        let lag: number | undefined;
        try {
          const samples = await this.fetchSamples(source.rawUrl);
          const totals: Partial<Record<ChartedStreamMetric, number>> = {};
          for (const metric of COUNTERS) {
            const value = sumOf(samples, STREAM_METRIC_NAMES[metric], { pipeline: name });
            if (value !== undefined) totals[metric] = value;
          }
          lag = sumOf(samples, STREAM_METRIC_NAMES.lag, { pipeline: name });
          if (source.totals && source.lastAt !== undefined && at > source.lastAt) {
            rates = {};
            for (const metric of COUNTERS) {
              const cur = totals[metric] ?? 0;
              const prev = source.totals[metric] ?? 0;
              // a restarted processor starts its counters at 0 again
              rates[metric] = (cur >= prev ? cur - prev : cur) / ((at - source.lastAt) / 1000);
            }
          }
          source.state = 'reachable';
          delete source.reason;
          source.lastOkAt = at;
          source.lastAt = at;
          source.totals = totals;
          source.refused = samples
            .filter((x) => x.name === SCHEMA_REFUSED_METRIC && x.labels.pipeline === name && x.labels.schema !== undefined && x.labels.path !== undefined)
            .map((x) => ({ schema: x.labels.schema!, path: x.labels.path! }));
          const found = findingsOf(samples, name);
          source.findings = found.findings;
          source.findingsOmitted = found.omitted;
        } catch (e) {
          source.state = 'unreachable';
          source.reason = reasonOf(e);
          // the next good scrape starts the rates afresh
          delete source.totals;
          delete source.refused;
          delete source.findings;
          delete source.findingsOmitted;
          delete source.lastAt;
        }
        if (source.state !== previous)
          this.options.onChange?.(name, { url: source.url, state: source.state, ...(source.reason ? { reason: source.reason } : {}) });
        return { reachable: source.state === 'reachable', rates, lag };
      }),
    );
    const reachable = results.filter((r) => r.reachable);
    const withRates = reachable.filter((r) => r.rates);
    const sum = (pick: (r: (typeof results)[number]) => number | undefined, from: typeof results) =>
      from.length ? from.reduce((acc, r) => acc + (pick(r) ?? 0), 0) : null;
    ring.samples.push({
      at: now(),
      recordsIn: sum((r) => r.rates?.recordsIn, withRates),
      recordsOut: sum((r) => r.rates?.recordsOut, withRates),
      deadLettered: sum((r) => r.rates?.deadLettered, withRates),
      lag: reachable.some((r) => r.lag !== undefined) ? sum((r) => r.lag, reachable) : null,
    });
    if (ring.samples.length > this.keep) ring.samples.splice(0, ring.samples.length - this.keep);
  }

  private async fetchSamples(rawUrl: string): Promise<PromSample[]> {
    const allowed = this.options.allowedHosts ?? (() => []);
    // checked here too, so an injected fetch is held to it; the default fetch also checks what a name resolves to
    if (refusedHost(new URL(rawUrl), allowed())) throw refusedAddress();
    const doFetch = this.options.fetch ?? guardedFetch(allowed);
    const res = await doFetch(rawUrl, {
      redirect: 'error',
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 2000),
      headers: { accept: 'text/plain;version=0.0.4' },
    });
    if (!res.ok) {
      await res.body?.cancel();
      throw new PortalFault('SCRAPE_UNUSABLE', `HTTP ${res.status}`);
    }
    return parsePrometheusText(await readCapped(res));
  }
}
