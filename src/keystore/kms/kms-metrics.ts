import { Counter, Histogram, type Registry } from 'prom-client';
import type { KmsMetricsSink } from './kms-decorators.ts';

/**
 * The KEK's calls as Prometheus metrics (meteredKms's sink): veil_kms_calls_total by operation
 * and outcome, veil_kms_call_seconds by operation. Registered into each process's /metrics
 * registry (registerIn); they name no key, KMS or value.
 */
export class KmsMetrics implements KmsMetricsSink {
  private readonly calls = new Counter({
    name: 'veil_kms_calls_total',
    help: 'Calls to the key-encryption key (wrap, unwrap) by outcome',
    labelNames: ['op', 'outcome'] as const,
    registers: [],
  });
  private readonly seconds = new Histogram({
    name: 'veil_kms_call_seconds',
    help: 'Time of a call to the key-encryption key',
    labelNames: ['op'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [],
  });

  call(op: 'wrap' | 'unwrap', outcome: 'ok' | 'KMS_UNAVAILABLE' | 'KMS_REFUSED' | 'error', seconds: number): void {
    this.calls.inc({ op, outcome });
    this.seconds.observe({ op }, seconds);
  }

  registerIn(registry: Registry): void {
    registry.registerMetric(this.calls);
    registry.registerMetric(this.seconds);
  }
}
