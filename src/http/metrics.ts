import { Counter, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics } from '../observability/index.ts';

/**
 * Prometheus metrics. Labels are routes, status codes, class/property/action names and error
 * codes — configuration names, never values or client secrets.
 */
export class HttpMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'veil_http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly latency = new Histogram({
    name: 'veil_http_request_duration_seconds',
    help: 'HTTP request latency by route',
    labelNames: ['route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly instances = new Counter({
    name: 'veil_instances_transformed_total',
    help: 'Values transformed by class, property and action',
    labelNames: ['class', 'property', 'action'] as const,
    registers: [this.registry],
  });
  readonly errors = new Counter({ name: 'veil_errors_total', help: 'Failed calls by error code', labelNames: ['code'] as const, registers: [this.registry] });

  constructor() {
    collectProcessMetrics(this.registry);
  }
}
