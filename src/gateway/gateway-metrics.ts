import { Counter, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics } from '../observability/index.ts';

/**
 * Prometheus metrics of `veil gateway`, served at `metricsPath`. Labels are configuration names
 * and fixed vocabularies only — the route's name, the field's Class.property, an HTTP status, a
 * catalog error code — never a path, a query string, a header value or a body value.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  /** outcome: `forwarded` (the upstream's response went to the caller), `aborted` (a connection dropped mid-exchange), or the refusal's error code */
  readonly requests = new Counter({
    name: 'veil_gateway_requests_total',
    help: 'Requests by route, outcome (forwarded, aborted or the error code) and status',
    labelNames: ['route', 'outcome', 'status'] as const,
    registers: [this.registry],
  });
  /** result: `response` (headers arrived) or the error code (UPSTREAM_UNAVAILABLE, UPSTREAM_TIMEOUT) */
  readonly upstreamLatency = new Histogram({
    name: 'veil_gateway_upstream_duration_seconds',
    help: 'Time from sending a request upstream to its response headers, or to the failure, by route and result',
    labelNames: ['route', 'result'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  /** result: `protected` (request), `revealed` (cleartext out), the ifDenied action's name (e.g. Mask), or `kept` (left as the upstream sent it) */
  readonly fields = new Counter({
    name: 'veil_gateway_fields_total',
    help: 'Selected values by route, field (Class.property) and result: protected, revealed, the ifDenied action, or kept',
    labelNames: ['route', 'field', 'result'] as const,
    registers: [this.registry],
  });

  /**
   * The unmapped guard's findings (personal data at request-body paths no selector names), by kind
   * (email, payment-card, …) and result: `refused` (the request was refused, nothing forwarded) or
   * `protected` (protected as the route's field for that kind, and forwarded)
   */
  readonly unmapped = new Counter({
    name: 'veil_gateway_unmapped_findings_total',
    help: 'Personal data the unmapped guard found in request bodies at paths no selector names, by route, kind and result: refused or protected',
    labelNames: ['route', 'kind', 'result'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectProcessMetrics(this.registry);
  }
}
