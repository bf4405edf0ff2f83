import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { VeilError } from '../engine/index.ts';
import { ERROR_CATALOG } from '../errors/catalog.ts';
import type { Html } from './html.ts';
import { formOf, type PortalContext, type PortalDeps } from './portal-deps.ts';
import { csrfMatches, holds, SessionStore, type Session } from './sessions.ts';
import type { AdminRight } from '../identity/index.ts';
import { crossOriginReason } from './same-origin.ts';
import { DEFAULT_PORTAL_CONFIG } from './portal-config.ts';
import { SandboxRunner } from './sandbox-runner.ts';
import { errorPage } from './views/layout.ts';
import { registerAuthRoutes, sessionIdOf } from './routes/auth-routes.ts';
import { registerVersionRoutes } from './routes/version-routes.ts';
import { registerDraftRoutes } from './routes/draft-routes.ts';
import { registerTesterRoutes } from './routes/tester-routes.ts';
import { registerInsightRoutes } from './routes/insight-routes.ts';
import { registerDiscoverRoutes } from './routes/discover-routes.ts';
import { registerSubjectRoutes } from './routes/subject-routes.ts';

export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const STATIC: Record<string, string> = { 'portal.css': 'text/css; charset=utf-8', 'portal.js': 'text/javascript; charset=utf-8' };

/**
 * The administration portal under /admin: server-rendered pages, plain forms, one static script.
 * Every response carries a CSP without inline script and `Cache-Control: no-store`; every page but
 * sign-in needs a session (else 303 to sign-in) holding the page's admin right (else 403); every
 * POST comes from the portal's own origin (else 403 CROSS_ORIGIN_REFUSED, same-origin.ts) and, but
 * sign-in, carries the session's CSRF token (else 403).
 */
export function registerPortal(app: FastifyInstance, deps: PortalDeps): void {
  app.register(
    async (scope) => {
      acceptFormsAndHarden(scope);
      const context = portalContext(deps);
      scope.addHook('onClose', async () => context.sandbox.close());
      registerStatic(scope);
      registerAuthRoutes(scope, context);
      registerVersionRoutes(scope, context);
      registerDraftRoutes(scope, context);
      registerDiscoverRoutes(scope, context);
      registerTesterRoutes(scope, context);
      registerInsightRoutes(scope, context);
      registerSubjectRoutes(scope, context);
      scope.setErrorHandler((error, req, reply) => errorReply(context.sessions, error, req, reply));
    },
    { prefix: '/admin' },
  );
}

/** Forms parsed as URLSearchParams; every response's security headers set before any route runs. */
function acceptFormsAndHarden(scope: FastifyInstance): void {
  scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => done(null, new URLSearchParams(body as string)));
  scope.addHook('onRequest', async (_req, reply) => {
    reply
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('cache-control', 'no-store')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin')
      .header('x-frame-options', 'DENY');
  });
}

/** What every route gets: the deps, the portal's configuration, its sessions and sandbox, and the guard, send and audit it shares. */
function portalContext(deps: PortalDeps): PortalContext {
  const portal = deps.portal ?? DEFAULT_PORTAL_CONFIG;
  const sessions = new SessionStore(deps.now, { perIdentity: portal.sessionsPerIdentity, max: portal.maxSessions });
  const sandbox = new SandboxRunner({ timeoutMs: portal.sandboxTimeoutMs, workerUrl: deps.configPort.sandboxWorker });
  return {
    ...deps,
    portal,
    sessions,
    sandbox,
    send,
    guard: (req, reply, right) => guard(sessions, req, reply, right),
    async audit_(session, action, target, outcome, requestId) {
      await deps.audit.record({
        eventId: randomUUID(),
        time: deps.now().toISOString(),
        requestId,
        channel: 'portal',
        ...(session ? { client: session.caller.clientId, subject: session.caller.subject, issuer: session.caller.issuer } : {}),
        outcome,
        instances: 0,
        fields: [],
        admin: { action, ...(target === undefined ? {} : { target }) },
      });
    },
  };
}

function send(reply: FastifyReply, body: Html, status = 200): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(body.text);
}

/** PortalContext.guard: the request's session if it may open the page, else undefined once it has replied. */
function guard(sessions: SessionStore, req: FastifyRequest, reply: FastifyReply, right: AdminRight): Session | undefined {
  const session = sessions.get(sessionIdOf(req));
  // before anything else: a POST another origin's page made changes nothing, whatever it carries
  const crossOrigin = req.method === 'POST' ? crossOriginReason(req) : undefined;
  if (crossOrigin) {
    req.log.info({ code: 'CROSS_ORIGIN_REFUSED', reason: crossOrigin }, 'portal request refused');
    void send(reply, errorPage(403, 'CROSS_ORIGIN_REFUSED', `${ERROR_CATALOG.CROSS_ORIGIN_REFUSED.title} (${crossOrigin})`, session), 403);
    return undefined;
  }
  if (!session) {
    const next = req.method === 'GET' ? `?next=${encodeURIComponent(req.url)}` : '';
    void reply.code(303).header('location', `/admin/sign-in${next}`).send();
    return undefined;
  }
  if (req.method === 'POST' && !csrfMatches(session, formOf(req).get('_csrf'))) {
    void send(reply, errorPage(403, 'CSRF_TOKEN_INVALID', ERROR_CATALOG.CSRF_TOKEN_INVALID.title, session), 403);
    return undefined;
  }
  if (!holds(session, right)) {
    void send(reply, errorPage(403, 'ADMIN_ROLE_MISSING', `this needs the ${right} right (role admin-${right})`, session), 403);
    return undefined;
  }
  return session;
}

/** The portal's two static files, each by its own name only. */
function registerStatic(scope: FastifyInstance): void {
  scope.get('/static/:file', async (req, reply) => {
    const file = (req.params as { file: string }).file;
    const type = Object.hasOwn(STATIC, file) ? STATIC[file] : undefined;
    if (!type) return send(reply, errorPage(404, 'NOT_FOUND', 'no such file'), 404);
    const text = await readFile(new URL(`./static/${file}`, import.meta.url), 'utf8');
    return reply.type(type).header('cache-control', 'no-cache').send(text);
  });
}

/** A failed page as the error page: a catalogued code with its status and message, anything else a 500 that names no detail. */
function errorReply(sessions: SessionStore, error: unknown, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  // only veil's errors are answered with their code: a fault or a library's error whose code happens to be a wire code is a 500
  const code = error instanceof VeilError ? error.code : undefined;
  const known = code !== undefined && Object.hasOwn(ERROR_CATALOG, code) ? (code as keyof typeof ERROR_CATALOG) : undefined;
  const status = known ? ERROR_CATALOG[known].status : 500;
  if (!known)
    req.log.error(
      {
        errorType: (error as Error).name,
        frames: String((error as Error).stack ?? '')
          .split('\n')
          .slice(1, 8),
      },
      'portal: unexpected error',
    );
  const session = sessions.get(sessionIdOf(req));
  if (known && ERROR_CATALOG[known].status === 429) reply.header('retry-after', String((error as { retryAfter?: number }).retryAfter ?? 60));
  return send(reply, errorPage(status, known ?? 'INTERNAL', known ? (error as Error).message : 'an unexpected error', session), status);
}
