import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuditSink } from '../../audit/audit-sink.ts';
import { auditEvent, fieldCounts } from '../../audit/audit-event.ts';
import type { Engine, Plan } from '../../engine/engine.ts';
import type { ServiceConfig } from '../../engine/config/schema.ts';
import { VeilError } from '../../engine/errors.ts';
import { RateLimiter } from '../../identity/rate-limiter.ts';
import type { BearerVerifier, Caller } from '../../identity/token-verifier.ts';
import type { HttpMetrics } from '../metrics.ts';
import { transformBodyChecker } from '../transform-body.ts';

interface Deps {
  engine: Engine;
  service: ServiceConfig;
  verifier: BearerVerifier;
  audit: AuditSink;
  metrics: HttpMetrics;
  now: () => Date;
  sendError: (reply: FastifyReply, error: VeilError, req: FastifyRequest) => FastifyReply;
}

/**
 * POST /transform (spec §4.1). Order: bearer token (401) → rate limit per client (429) → one pass
 * over the body: limits, shape, identifiers (413/422/400) → engine plan: contexts, grants, fields
 * (400/403/422) → audit of every call that reveals cleartext, before any value is touched: if the
 * audit sink fails, the call is refused (503) → execute. Denied calls are audited too.
 */
export function registerTransformRoute(app: FastifyInstance, deps: Deps): void {
  const limiter = new RateLimiter({ rate: deps.service.rateLimit.transformPerSecond, burst: deps.service.rateLimit.transformBurst, now: () => deps.now().getTime() });
  const checkBody = transformBodyChecker(deps.service.limits);
  app.post('/transform', async (req, reply) => {
    let caller: Caller | undefined;
    let plan: Plan | undefined;
    try {
      if (!isJson(req.headers['content-type'])) throw new VeilError('CONTENT_TYPE_UNSUPPORTED', 'the body must be application/json');
      caller = await deps.verifier.verifyHeader(req.headers.authorization);
      const wait = limiter.take(caller.clientId);
      if (wait > 0) throw Object.assign(new VeilError('RATE_LIMITED', 'too many calls for this client'), { retryAfter: Math.ceil(wait) });
      // Engine.plan checks shape and identifiers again: it cannot yet take a checked body
      plan = deps.engine.plan(checkBody(req.body), caller);
      const reveals = plan.requests.some((r) => r.reveals);
      let response;
      try {
        response = deps.engine.execute(plan);
      } catch (e) {
        if (reveals && e instanceof VeilError) {
          await deps.audit.record(auditEvent({ requestId: req.id, channel: 'http', now: deps.now(), caller, plan, outcome: 'failed', code: e.code })).catch(() => req.log.warn('audit sink failed to record a failed unprotect'));
        }
        throw e;
      }
      // cleartext leaves only once its audit record is written: no record, no values
      if (reveals) {
        try {
          await deps.audit.record(auditEvent({ requestId: req.id, channel: 'http', now: deps.now(), caller, plan, outcome: 'ok' }));
        } catch {
          throw new VeilError('AUDIT_UNAVAILABLE', 'the audit sink cannot record this unprotect, so it was refused');
        }
      }
      for (const f of fieldCounts(plan)) {
        deps.metrics.instances.inc({ class: f.className, property: f.propertyName, action: f.action }, f.count);
      }
      return reply.code(200).send(response);
    } catch (e) {
      const error = e instanceof VeilError ? e : new VeilError('INTERNAL', 'an unexpected error; nothing was transformed');
      if (!(e instanceof VeilError)) req.log.error({ errorType: (e as Error).name, frames: String((e as Error).stack ?? '').split('\n').slice(1, 8) }, 'unexpected error');
      if (error.status === 401 || error.status === 403) {
        // best effort: the call is refused whether or not the audit records it
        await deps.audit.record(auditEvent({ requestId: req.id, channel: 'http', now: deps.now(), caller, plan, outcome: 'denied', code: error.code, body: req.body })).catch(() => req.log.warn('audit sink failed to record a denied call'));
      }
      return deps.sendError(reply, error, req);
    }
  });
}

function isJson(contentType: string | undefined): boolean {
  return /^application\/json\s*(;|$)/i.test(contentType ?? '');
}
