import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

/** Liveness of a process: healthy, or failing with details for the 503 body (states and codes, never values). */
export interface Liveness {
  healthy: boolean;
  /** merged into the 503 body beside `status: "failing"`, e.g. `{ pipelines: [{ pipeline, reason }] }` */
  detail?: Record<string, unknown>;
  /** merged into the 200 body beside `status: "ok"`: what an operator should know of a healthy process (states and ids, never values) */
  info?: Record<string, unknown>;
}

export interface OpsDeps {
  /** GET /healthz: 200 `{"status":"ok", …info}`, or 503 `{"status":"failing", …detail}` */
  live(): Liveness;
  /** GET /readyz: 200 `{"status":"ready"}`, or 503 `{"status":"not ready"}` (starting, draining) */
  ready(): boolean;
  /** GET /metrics: this registry in the Prometheus text format */
  metrics: Registry;
}

/** The operations routes every veil process serves: the HTTP service and the stream processors. */
export function registerOpsRoutes(app: FastifyInstance, deps: OpsDeps): void {
  app.get('/healthz', async (_req, reply) => {
    const live = deps.live();
    return live.healthy ? reply.code(200).send({ status: 'ok', ...live.info }) : reply.code(503).send({ status: 'failing', ...live.detail });
  });
  app.get('/readyz', async (_req, reply) => {
    const ready = deps.ready();
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready' });
  });
  app.get('/metrics', async (_req, reply) => reply.type(deps.metrics.contentType).send(await deps.metrics.metrics()));
}
