import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { VeilError } from '../../engine/index.ts';
import { OAuthError } from '../../identity/errors.ts';
import { RateLimiter, type Caller } from '../../identity/index.ts';
import { formOf, type Form, type PortalContext } from '../portal-deps.ts';
import { holds, type Session } from '../sessions.ts';
import { crossOriginReason } from '../same-origin.ts';
import { signInPage } from '../views/sign-in-view.ts';

export const SESSION_COOKIE = 'veil_admin';

export function sessionIdOf(req: FastifyRequest): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Only a path inside the portal: never another site. */
function safeNext(next: string | undefined): string {
  return next && /^\/admin(\/[A-Za-z0-9/_.?=&%:-]*)?$/.test(next) && !next.startsWith('//') ? next : '/admin';
}

/** A client id as the limiter keys it: anything that cannot be one shares one bucket (and takes no memory). */
const clientKey = (id: string | undefined) => (id && /^[A-Za-z0-9._-]{1,64}$/.test(id) ? id : '(not a client id)');

/**
 * Failed sign-ins per client id and, ten times looser, per source address (`req.ip`: the peer, or
 * with service.trustProxy the client a trusted proxy names). Checked before any work; while one is
 * exhausted the answer is 429 SIGN_IN_RATE_LIMITED with Retry-After and only the first refusal per
 * address and minute is audited, so an unauthenticated flood cannot grow the audit log.
 */
function signInLimits(perMinute: number, now: () => Date) {
  const ms = () => now().getTime();
  const perClient = new RateLimiter({ rate: perMinute / 60, burst: perMinute, now: ms });
  const perAddress = new RateLimiter({ rate: (perMinute * 10) / 60, burst: perMinute * 10, now: ms });
  const audited = new RateLimiter({ rate: 1 / 60, burst: 1, now: ms });
  return {
    wait: (client: string | undefined, address: string) => Math.max(client === undefined ? 0 : perClient.wait(clientKey(client)), perAddress.wait(address)),
    failed(client: string | undefined, address: string) {
      if (client !== undefined) perClient.take(clientKey(client));
      perAddress.take(address);
    },
    /** whether this refusal is the one of the minute that gets an audit record */
    auditRefusal: (address: string) => audited.take(address) === 0,
  };
}

/**
 * GET/POST /admin/sign-in and POST /admin/sign-out. An admin signs in with what veil already
 * trusts: a configured client's id and secret (through the token service, with its rate limits),
 * or a token of veil or of an external provider (through the verifier). The identity must hold an
 * admin role. The session cookie is HttpOnly, SameSite=Strict, Path=/admin (Secure over HTTPS).
 */
export function registerAuthRoutes(app: FastifyInstance, ctx: PortalContext): void {
  registerSignIn(app, ctx);
  registerSignOut(app, ctx);
}

/** The sign-in page and its two forms (a client's credentials, a token). */
function registerSignIn(app: FastifyInstance, ctx: PortalContext): void {
  const signIn = (reply: FastifyReply, next: string, problem?: string, status = 200) =>
    ctx.send(reply, signInPage({ next, devClientId: ctx.devClientId, ...(problem ? { problem } : {}) }), status);

  app.get('/sign-in', async (req, reply) => signIn(reply, safeNext((req.query as { next?: string }).next)));

  const limits = signInLimits(ctx.portal.signInFailuresPerMinute, ctx.now);

  app.post('/sign-in', async (req, reply) => {
    const form = formOf(req);
    const next = safeNext(form.get('next'));
    // login CSRF: a browser names the page a form came from; it must be this site (as the client
    // saw it: behind a trusted TLS terminator, X-Forwarded-Proto/-Host say https and its name)
    if (crossOriginReason(req)) return signIn(reply, next, 'CROSS_ORIGIN_REFUSED: the sign-in form must be sent from this site.', 403);
    const byToken = form.get('kind') === 'token';
    const client = byToken ? undefined : (form.get('client_id') ?? '');
    const wait = limits.wait(client, req.ip);
    if (wait > 0) {
      if (limits.auditRefusal(req.ip)) await ctx.audit_(undefined, 'sign-in', 'rate limited (SIGN_IN_RATE_LIMITED)', 'denied', req.id);
      reply.header('retry-after', String(Math.ceil(wait)));
      return signIn(reply, next, 'SIGN_IN_RATE_LIMITED: too many failed sign-ins; wait before trying again.', 429);
    }
    let caller: Caller;
    try {
      caller = await callerOf(ctx, form, byToken, req.ip);
    } catch (e) {
      // an OAuthError (the client's credentials) is a VeilError too, as the verifier's are
      if (!(e instanceof VeilError)) throw e;
      limits.failed(client, req.ip);
      if (e instanceof OAuthError && e.code === 'slow_down') {
        reply.header('retry-after', String(e.retryAfter ?? 60));
        return signIn(reply, next, 'SIGN_IN_RATE_LIMITED: too many failed sign-ins; wait before trying again.', 429);
      }
      await ctx.audit_(undefined, 'sign-in', undefined, 'denied', req.id);
      return signIn(reply, next, 'Sign-in failed: unknown client, wrong secret, or a token veil does not trust.', e instanceof OAuthError ? e.status : 401);
    }
    const identity = { caller } as Session;
    if (!holds(identity, 'viewer')) {
      await ctx.audit_(identity, 'sign-in', 'no admin role', 'denied', req.id);
      return signIn(reply, next, 'This identity holds no admin role (admin-viewer, admin-editor, admin-publisher or admin-tester).', 403);
    }
    const session = ctx.sessions.create(caller);
    await ctx.audit_(session, 'sign-in', undefined, 'ok', req.id);
    const maxAge = Math.max(1, Math.floor((session.expiresAt.getTime() - ctx.now().getTime()) / 1000));
    const secure = req.protocol === 'https' ? '; Secure' : '';
    return reply
      .code(303)
      .header('set-cookie', `${SESSION_COOKIE}=${session.id}; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure}`)
      .header('location', next)
      .send();
  });
}

/** Who the form's credentials are: a token verified as given, or a client's id and secret exchanged for a token first (with the token service's own limits); a VeilError when neither is trusted. */
async function callerOf(ctx: PortalContext, form: Form, byToken: boolean, ip: string): Promise<Caller> {
  if (byToken) return ctx.verifier.verify((form.get('token') ?? '').trim());
  const issued = await ctx.tokens.issue(
    { grant_type: 'client_credentials', client_id: form.get('client_id') ?? '', client_secret: form.get('client_secret') ?? '' },
    ip,
  );
  return ctx.verifier.verify(issued.access_token);
}

/** The sign-out form: the session ends and its cookie is cleared. */
function registerSignOut(app: FastifyInstance, ctx: PortalContext): void {
  app.post('/sign-out', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    ctx.sessions.end(session.id);
    await ctx.audit_(session, 'sign-out', undefined, 'ok', req.id);
    return reply
      .code(303)
      .header('set-cookie', `${SESSION_COOKIE}=; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=0${req.protocol === 'https' ? '; Secure' : ''}`)
      .header('location', '/admin/sign-in')
      .send();
  });
}
