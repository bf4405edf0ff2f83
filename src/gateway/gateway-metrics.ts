import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Counts kept by label values in nested maps and added to their prom-client counter when it is
 * read (a scrape, `registry.metrics()`): an exchange pays a few map lookups, not a labels object
 * and prom-client's label hashing per increment. The label combinations are bounded by the
 * configuration (routes, fields) and fixed vocabularies, as the counter's own series are.
 */
class Tally<L extends string> {
  private readonly counts = new Map<string, Map<string, Map<string | number, { labels: Record<L, string>; n: number }>>>();
  private readonly names: readonly [L, L, L];

  constructor(names: readonly [L, L, L]) {
    this.names = names;
  }

  add(a: string, b: string, c: string | number, n = 1): void {
    let byB = this.counts.get(a);
    if (!byB) this.counts.set(a, (byB = new Map()));
    let byC = byB.get(b);
    if (!byC) byB.set(b, (byC = new Map()));
    const entry = byC.get(c);
    if (entry) entry.n += n;
    else byC.set(c, { labels: { [this.names[0]]: a, [this.names[1]]: b, [this.names[2]]: String(c) } as Record<L, string>, n });
  }

  /** Adds what was counted since the last read to `counter`. */
  flushInto(counter: Counter<L>): void {
    for (const byB of this.counts.values()) {
      for (const byC of byB.values()) {
        for (const entry of byC.values()) {
          if (entry.n === 0) continue;
          counter.inc(entry.labels, entry.n);
          entry.n = 0;
        }
      }
    }
  }
}

/**
 * Prometheus metrics of `veil gateway`, served at `metricsPath`. Labels are configuration names
 * and fixed vocabularies only — the route's name, the field's Class.property, an HTTP status, a
 * catalog error code — never a path, a query string, a header value or a body value.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requestCounts = new Tally<'route' | 'outcome' | 'status'>(['route', 'outcome', 'status']);
  private readonly fieldCounts = new Tally<'route' | 'field' | 'result'>(['route', 'field', 'result']);
  /** outcome: `forwarded` (the upstream's response went to the caller), `aborted` (a connection dropped mid-exchange), or the refusal's error code */
  readonly requests: Counter<'route' | 'outcome' | 'status'> = new Counter({
    name: 'veil_gateway_requests_total', help: 'Requests by route, outcome (forwarded, aborted or the error code) and status',
    labelNames: ['route', 'outcome', 'status'] as const, registers: [this.registry],
    collect: () => this.requestCounts.flushInto(this.requests),
  });
  /** result: `response` (headers arrived) or the error code (UPSTREAM_UNAVAILABLE, UPSTREAM_TIMEOUT) */
  readonly upstreamLatency = new Histogram({
    name: 'veil_gateway_upstream_duration_seconds', help: 'Time from sending a request upstream to its response headers, or to the failure, by route and result',
    labelNames: ['route', 'result'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [this.registry],
  });
  /** result: `protected` (request), `revealed` (cleartext out), the ifDenied action's name (e.g. Mask), or `kept` (left as the upstream sent it) */
  readonly fields: Counter<'route' | 'field' | 'result'> = new Counter({
    name: 'veil_gateway_fields_total', help: 'Selected values by route, field (Class.property) and result: protected, revealed, the ifDenied action, or kept',
    labelNames: ['route', 'field', 'result'] as const, registers: [this.registry],
    collect: () => this.fieldCounts.flushInto(this.fields),
  });

  /**
   * The unmapped guard's findings (personal data at request-body paths no selector names), by kind
   * (email, payment-card, …) and result: `refused` (the request was refused, nothing forwarded) or
   * `protected` (protected as the route's field for that kind, and forwarded)
   */
  readonly unmapped = new Counter({
    name: 'veil_gateway_unmapped_findings_total', help: 'Personal data the unmapped guard found in request bodies at paths no selector names, by route, kind and result: refused or protected',
    labelNames: ['route', 'kind', 'result'] as const, registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'veil_gateway_' });
  }

  /** One request answered (or cut): veil_gateway_requests_total. */
  countRequest(route: string, outcome: string, status: number): void {
    this.requestCounts.add(route, outcome, status);
  }

  /** `n` selected values of `field` (Class.property) with `result`: veil_gateway_fields_total. */
  countField(route: string, field: string, result: string, n = 1): void {
    this.fieldCounts.add(route, field, result, n);
  }

  /** From sending a request upstream to its response headers (`response`) or its failure's code. */
  observeUpstream(route: string, result: string, seconds: number): void {
    this.upstreamLatency.observe({ route, result }, seconds);
  }
}
