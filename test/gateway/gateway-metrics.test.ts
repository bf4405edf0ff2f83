import { describe, expect, it } from 'vitest';
import { GatewayMetrics } from '../../src/gateway/gateway-metrics.ts';

const line = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(name)).sort();

describe('GatewayMetrics: counts kept per exchange, added to the counters when read', () => {
  it('counts requests and fields by their labels, once however often the registry is read', async () => {
    const m = new GatewayMetrics();
    m.countRequest('orders', 'forwarded', 200);
    m.countRequest('orders', 'forwarded', 200);
    m.countRequest('orders', 'BODY_NOT_JSON', 400);
    m.countField('orders', 'Customer.email', 'protected', 3);
    m.countField('orders', 'Customer.email', 'revealed');
    const first = await m.registry.metrics();
    expect(line(first, 'veil_gateway_requests_total{')).toEqual([
      'veil_gateway_requests_total{route="orders",outcome="BODY_NOT_JSON",status="400"} 1',
      'veil_gateway_requests_total{route="orders",outcome="forwarded",status="200"} 2',
    ]);
    expect(line(first, 'veil_gateway_fields_total{')).toEqual([
      'veil_gateway_fields_total{route="orders",field="Customer.email",result="protected"} 3',
      'veil_gateway_fields_total{route="orders",field="Customer.email",result="revealed"} 1',
    ]);
    // read again: nothing counted twice; then more counts add up
    expect(line(await m.registry.metrics(), 'veil_gateway_requests_total{')).toContain('veil_gateway_requests_total{route="orders",outcome="forwarded",status="200"} 2');
    m.countRequest('orders', 'forwarded', 200);
    m.requests.inc({ route: 'unmatched', outcome: 'EXPECTATION_FAILED', status: '417' });
    const third = line(await m.registry.metrics(), 'veil_gateway_requests_total{');
    expect(third).toContain('veil_gateway_requests_total{route="orders",outcome="forwarded",status="200"} 3');
    expect(third).toContain('veil_gateway_requests_total{route="unmatched",outcome="EXPECTATION_FAILED",status="417"} 1');
    expect((await m.requests.get()).values.find((v) => v.labels.outcome === 'forwarded')?.value).toBe(3);
  });

  it('observes upstream durations by route and result', async () => {
    const m = new GatewayMetrics();
    m.observeUpstream('orders', 'response', 0.0004);
    m.observeUpstream('orders', 'UPSTREAM_TIMEOUT', 30);
    const text = await m.registry.metrics();
    expect(text).toContain('veil_gateway_upstream_duration_seconds_bucket{le="0.0005",route="orders",result="response"} 1');
    expect(text).toContain('veil_gateway_upstream_duration_seconds_count{route="orders",result="UPSTREAM_TIMEOUT"} 1');
  });
});
