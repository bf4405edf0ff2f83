import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuditSink } from '../../audit/index.ts';
import { fieldCounts } from '../../audit/index.ts';
import { GuardedTransform } from '../../audit/index.ts';
import { VeilError, type Engine } from '../../engine/index.ts';
import type { ServiceConfig } from '../service-config.ts';
import { RateLimitedError } from '../../identity/errors.ts';
import { RateLimiter, type BearerVerifier } from '../../identity/index.ts';
import type { HttpMetrics } from '../metrics.ts';
import { transformBodyChecker } from '../transform-body.ts';
import { engineSource, type EngineSource } from '../engine-source.ts';
import type { Tracing } from '../../observability/index.ts';
import { transformTrace } from './transform-trace.ts';
import { DoorError } from '../../errors/door-errors.ts';
import { subjectKeysOf, type SubjectKeyStore } from '../../subjects/index.ts';

interface Deps {
  engine: Engine | EngineSource;
  service: ServiceConfig;
  verifier: BearerVerifier;
  audit: AuditSink;
  metrics: HttpMetrics;
  now: () => Date;
  sendError: (reply: FastifyReply, error: VeilError, req: FastifyRequest) => FastifyReply;
  /** a span per call when tracing is on (transform-trace.ts) */
  tracing?: Tracing;
  /** the active configuration version, named on the span */
  configVersion?: () => string;
  /** the subject-key store: keys of subject-scoped sequences (a Subject evidence names the subject) */
  subjects?: SubjectKeyStore;
}

/**
 * POST /transform (spec §4.1). Order: bearer token (401) → rate limit per client (429) → one pass
 * over the body: limits, shape, identifiers (413/422/400) → engine plan: contexts, grants, fields
 * (400/403/422) → execute →
 * audit of every call that reveals cleartext before any value leaves: if the audit sink fails, the
 * call is refused (503). Denied calls are audited too. The audit rule is GuardedTransform's
 * (src/audit/guarded-transform.ts), shared with the Kafka responder.
 */
export function registerTransformRoute(app: FastifyInstance, deps: Deps): void {
  const limiter = new RateLimiter({
    rate: deps.service.rateLimit.transformPerSecond,
    burst: deps.service.rateLimit.transformBurst,
    now: () => deps.now().getTime(),
  });
  const checkBody = transformBodyChecker(deps.service.limits);
  // the engine is read once per call: a publish in the admin portal swaps it for later calls only
  const engines = engineSource(deps.engine);
  const guards = new WeakMap<Engine, GuardedTransform>();
  const subjectKeys = subjectKeysOf(deps.subjects);
  const guardOf = (engine: Engine) => {
    let guard = guards.get(engine);
    if (!guard)
      guards.set(engine, (guard = new GuardedTransform({ engine, audit: deps.audit, now: deps.now, channel: 'http', scope: 'revealing', ...subjectKeys })));
    return guard;
  };
  // off: no hook is registered at all, so a call pays nothing for tracing
  const trace = deps.tracing?.enabled ? transformTrace(deps.tracing, () => deps.configVersion?.()) : undefined;
  app.post('/transform', trace ? trace.hooks : {}, async (req, reply) => {
    const outcome = await guardOf(engines.current()).run({
      requestId: req.id,
      body: req.body,
      authenticate: async () => {
        if (!isJson(req.headers['content-type'])) throw new DoorError('CONTENT_TYPE_UNSUPPORTED', 'the body must be application/json');
        return deps.verifier.verifyHeader(req.headers.authorization);
      },
      admit: (caller) => {
        const wait = limiter.take(caller.clientId);
        if (wait > 0) throw new RateLimitedError('too many calls for this client', Math.ceil(wait));
        // the one pass over the body: limits, shape, identifiers; the engine then plans it as checked
        return { checked: checkBody(req.body) };
      },
      checked: true,
      warn: (message) => req.log.warn(message),
    });
    if (!outcome.ok) {
      if ('unexpected' in outcome) {
        // its message may hold anything: log its type and frames only
        const e = outcome.unexpected as Error | undefined;
        req.log.error(
          {
            errorType: e?.name,
            frames: String(e?.stack ?? '')
              .split('\n')
              .slice(1, 8),
          },
          'unexpected error',
        );
      }
      trace?.refused(req, outcome.error.code);
      return deps.sendError(reply, outcome.error, req);
    }
    const counts = fieldCounts(outcome.plan);
    trace?.transformed(req, outcome.plan, counts);
    for (const f of counts) {
      deps.metrics.instances.inc({ class: f.className, property: f.propertyName, action: f.action }, f.count);
    }
    return reply.code(200).send(outcome.response);
  });
}

function isJson(contentType: string | undefined): boolean {
  return /^application\/json\s*(;|$)/i.test(contentType ?? '');
}
