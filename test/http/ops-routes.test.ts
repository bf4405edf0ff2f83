import Fastify from 'fastify';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerOpsRoutes, type Liveness } from '../../src/http/routes/ops-routes.ts';

/** The operations routes shared by the HTTP service and the stream processors (src/app/open-stream.ts). */
describe('ops routes', () => {
  function app(state: { live: Liveness; ready: boolean }) {
    const registry = new Registry();
    new Counter({ name: 'probe_total', help: 'a probe', registers: [registry] }).inc(3);
    const a = Fastify();
    registerOpsRoutes(a, { live: () => state.live, ready: () => state.ready, metrics: registry });
    return a;
  }

  it('/healthz: 200 ok while healthy; 503 failing with the details given (the stream names its failing pipelines)', async () => {
    const state = { live: { healthy: true } as Liveness, ready: true };
    const a = app(state);
    const ok = await a.inject({ method: 'GET', url: '/healthz' });
    expect([ok.statusCode, ok.json()]).toEqual([200, { status: 'ok' }]);
    state.live = { healthy: false, detail: { pipelines: [{ pipeline: 'customers', reason: 'halted: DEAD_LETTER_FAILED' }] } };
    const failing = await a.inject({ method: 'GET', url: '/healthz' });
    expect([failing.statusCode, failing.json()]).toEqual([
      503,
      { status: 'failing', pipelines: [{ pipeline: 'customers', reason: 'halted: DEAD_LETTER_FAILED' }] },
    ]);
    expect((await a.inject({ method: 'HEAD', url: '/healthz' })).statusCode).toBe(503);
  });

  it('/readyz follows ready(); /metrics serves the registry', async () => {
    const state = { live: { healthy: true } as Liveness, ready: false };
    const a = app(state);
    const notReady = await a.inject({ method: 'GET', url: '/readyz' });
    expect([notReady.statusCode, notReady.json()]).toEqual([503, { status: 'not ready' }]);
    state.ready = true;
    expect((await a.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ready' });
    const metrics = await a.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(metrics.body).toContain('probe_total 3');
  });
});
