import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { JWK } from 'jose';
import type { FastifyBaseLogger } from 'fastify';
import type { AuditSink } from '../audit/index.ts';
import { VeilError, type Engine } from '../engine/index.ts';
import type { ServiceConfig } from './service-config.ts';
import type { EngineSource } from './engine-source.ts';
import type { JwtSigner } from '../keystore/index.ts';
import type { BearerVerifier, TokenService } from '../identity/index.ts';
import { DEFAULT_BODY_READ_TIMEOUT_MS, registerBodyReadTimeout } from './body-timeout.ts';
import { HttpMetrics } from './metrics.ts';
import { openApiDocument } from './openapi.ts';
import { PROBLEM_CONTENT_TYPE, problemOf } from '../errors/problem.ts';
import { registerOpsRoutes, type Liveness } from './routes/ops-routes.ts';
import { registerTokenRoutes } from './routes/token-routes.ts';
import { registerTransformRoute } from './routes/transform-route.ts';
import { registerSubjectRoutes } from './routes/subject-routes.ts';
import { registerRouting } from './routing.ts';
import type { Tracing } from '../observability/index.ts';
import { DoorError } from '../errors/door-errors.ts';
import type { ErasureService, SubjectKeyStore } from '../subjects/index.ts';

/**
 * service.limits as the HTTP service reads it: bodyReadTimeoutMs (default 30 s) is not in the
 * configuration schema yet, so it is optional here.
 */
export type HttpServiceConfig = ServiceConfig & { limits: { bodyReadTimeoutMs?: number } };

export interface ServerDeps {
  /** an engine, or a source read once per call (the admin portal's publish swaps it) */
  engine: Engine | EngineSource;
  service: HttpServiceConfig;
  issuer: string;
  signer: JwtSigner;
  tokens: TokenService;
  verifier: BearerVerifier;
  audit: AuditSink;
  logger: FastifyBaseLogger;
  now: () => Date;
  metrics?: HttpMetrics;
  /** readiness: false while starting or draining */
  ready?: () => boolean;
  /** liveness beyond "the process answers": the KEK's lease (default: healthy) */
  live?: () => Liveness;
  /** serve HTTPS with this certificate and key (PEM), from service.tls */
  https?: { cert: Buffer; key: Buffer };
  /** a span per POST /transform call when tracing is on (routes/transform-trace.ts) */
  tracing?: Tracing;
  /** the active configuration version, named on those spans */
  configVersion?: () => string;
  /** the subject-key store: keys of subject-scoped sequences (issue 29), erasures */
  subjects?: SubjectKeyStore;
  /** erasures and status look-ups of data subjects (POST /admin/subjects/*, routes/subject-routes.ts) */
  erasures?: ErasureService;
  /** the erasure receipt key's versions, published at /.well-known/veil-receipt-keys.json */
  receiptKeys?: () => JWK[];
}

/** Builds the HTTP service: POST /transform, the token endpoint, discovery, health and metrics. */
export function buildServer(deps: ServerDeps): FastifyInstance {
  const metrics = deps.metrics ?? new HttpMetrics();
  const app = Fastify({
    ...(deps.https ? { https: { cert: deps.https.cert, key: deps.https.key, minVersion: 'TLSv1.2' as const } } : {}),
    // X-Forwarded-For/-Proto/-Host only from the configured proxies (req.ip, req.protocol, req.host)
    ...(deps.service.trustProxy ? { trustProxy: [...deps.service.trustProxy] } : {}),
    loggerInstance: deps.logger,
    bodyLimit: deps.service.limits.bodyBytes,
    // a gateway's well-formed id is kept so one call can be traced across services; audit
    // events add their own unique eventId, so caller-chosen ids cannot make records collide
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(given) ? given : randomUUID();
    },
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  }) as unknown as FastifyInstance;

  const send = (reply: FastifyReply, e: VeilError, req: FastifyRequest) => sendError(reply, e, req, metrics);
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
    (req as FastifyRequest & { startedAt: bigint }).startedAt = process.hrtime.bigint();
  });
  // the deadline first: a body still trickling in after an early 404/405 is cut off too
  registerBodyReadTimeout(app, deps.service.limits.bodyReadTimeoutMs ?? DEFAULT_BODY_READ_TIMEOUT_MS, send);
  registerRouting(app, send);
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    metrics.requests.inc({ route, method: req.method, status: String(reply.statusCode) });
    const started = (req as FastifyRequest & { startedAt?: bigint }).startedAt;
    if (started) metrics.latency.observe({ route }, Number(process.hrtime.bigint() - started) / 1e9);
  });

  app.setErrorHandler((error, req, reply) => {
    if (!(error instanceof VeilError) && !(error as { statusCode?: number }).statusCode) {
      // an unexpected error: its message may hold anything, so log its type and frames only
      req.log.error(
        {
          errorType: (error as Error).name,
          frames: String((error as Error).stack ?? '')
            .split('\n')
            .slice(1, 8),
        },
        'unexpected error',
      );
    }
    return sendError(reply, toVeilError(error), req, metrics);
  });
  // only JSON reaches /transform; the form parser is registered for the token endpoint alone
  app.removeContentTypeParser('text/plain');

  registerTransformRoute(app, { ...deps, metrics, sendError: send });
  app.register(async (scope) => registerTokenRoutes(scope, deps));
  registerSubjectRoutes(app, deps);

  registerOpsRoutes(app, { live: deps.live ?? (() => ({ healthy: true })), ready: () => deps.ready?.() ?? true, metrics: metrics.registry });
  const openapi = openApiDocument(deps.issuer, deps.service.limits);
  app.get('/openapi.json', async () => openapi);
  return app;
}

function sendError(reply: FastifyReply, error: VeilError, req: FastifyRequest, metrics: HttpMetrics): FastifyReply {
  metrics.errors.inc({ code: error.code });
  if (error.status >= 500) req.log.error({ code: error.code, err: { message: error.message } }, 'request failed');
  else req.log.info({ code: error.code }, 'request refused');
  if (error.status === 401) {
    const description = error.code === 'TOKEN_MISSING' ? '' : `, error="invalid_token", error_description="${error.code.toLowerCase()}"`;
    reply.header('www-authenticate', `Bearer realm="veil"${description}`);
  }
  // RFC 9110 §15.5.9: the rest of a timed-out body may still be on its way
  if (error.code === 'REQUEST_TIMEOUT') reply.header('connection', 'close');
  if (error.code === 'RATE_LIMITED') {
    const retry = (error as VeilError & { retryAfter?: number }).retryAfter;
    if (retry) reply.header('retry-after', String(retry));
  }
  return reply.code(error.status).type(PROBLEM_CONTENT_TYPE).send(problemOf(error, req.id));
}

/** Fastify's own errors (parsing, limits, content type) mapped onto the catalog; anything else is INTERNAL. */
function toVeilError(error: unknown): VeilError {
  if (error instanceof VeilError) return error;
  const e = error as { code?: string; statusCode?: number };
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new DoorError('CONTENT_TYPE_UNSUPPORTED', 'the body must be application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new DoorError('BODY_TOO_LARGE', 'the body exceeds the size limit');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new VeilError('REQUEST_MALFORMED', 'the body is not valid JSON', [{ code: 'REQUEST_MALFORMED', pointer: '', message: 'not valid JSON' }]);
  }
  if (error instanceof SyntaxError || e.statusCode === 400) {
    return new VeilError('REQUEST_MALFORMED', 'the body is not valid JSON', [{ code: 'REQUEST_MALFORMED', pointer: '', message: 'not valid JSON' }]);
  }
  if (e.statusCode === 415) return new DoorError('CONTENT_TYPE_UNSUPPORTED', 'the body must be application/json');
  if (e.statusCode === 413) return new DoorError('BODY_TOO_LARGE', 'the body exceeds the size limit');
  if (e.statusCode === 405) return new DoorError('METHOD_NOT_ALLOWED', 'method not allowed');
  return new VeilError('INTERNAL', 'an unexpected error; nothing was transformed');
}
