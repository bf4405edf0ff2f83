import type { FastifyInstance, FastifyReply } from 'fastify';
import { VeilError } from '../../engine/index.ts';
import { formOf, type PortalContext } from '../portal-deps.ts';
import { holds, type Session } from '../sessions.ts';
import { subjectsPage, type SubjectsOutcome } from '../views/subjects-view.ts';
import { errorPage } from '../views/layout.ts';
import { PortalError } from '../errors.ts';
import type { SubjectActor } from '../../subjects/index.ts';

/**
 * GET/POST /admin/subjects: a data subject's status (any admin) and its erasure (publisher), through
 * the service's ErasureService — the API's checks, receipts and audit records, with channel portal.
 * One POST route for both forms (`op`), so the guard picks the right from what is asked; the answer
 * is the page itself (no redirect: a receipt or a status must not travel in a URL).
 */
export function registerSubjectRoutes(app: FastifyInstance, ctx: PortalContext): void {
  const render = (reply: FastifyReply, session: Session, outcome?: SubjectsOutcome, status = 200) =>
    ctx.send(
      reply,
      subjectsPage({ session, canErase: holds(session, 'publisher'), available: ctx.erasures !== undefined, ...(outcome ? { outcome } : {}) }),
      status,
    );

  app.get('/subjects', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    return render(reply, session);
  });

  app.post('/subjects', async (req, reply) => {
    const form = formOf(req);
    const op = form.get('op') === 'erase' ? 'erase' : 'status';
    // the publisher right is checked below rather than by the guard, so a refused erasure is audited too
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const { caller } = session;
    const actor: SubjectActor = {
      by: caller.subject,
      channel: 'portal',
      requestId: req.id,
      caller: { clientId: caller.clientId, subject: caller.subject, issuer: caller.issuer },
    };
    const erasures = ctx.erasures;
    if (op === 'erase' && !holds(session, 'publisher')) {
      const message = 'this needs the publisher right (role admin-publisher)';
      await erasures?.refuse('erase', actor, new PortalError('ADMIN_ROLE_MISSING', message)).catch(() => undefined);
      return ctx.send(reply, errorPage(403, 'ADMIN_ROLE_MISSING', message, session), 403);
    }
    if (!erasures) return render(reply, session, { kind: 'problem', code: 'SUBJECT_STORE_UNAVAILABLE', message: 'this service has no subject-key store' }, 503);
    try {
      if (op === 'status') return render(reply, session, { kind: 'status', status: await erasures.status(form.get('subject'), actor) });
      // the checkbox is the page's confirmation; the browser requires it, this checks it for any other client
      if (form.get('confirm') !== 'yes')
        return render(reply, session, { kind: 'problem', code: 'ERASURE_REQUEST_INVALID', message: 'confirm the erasure: it cannot be undone' }, 400);
      return render(reply, session, { kind: 'erased', result: await erasures.erase(form.get('subject'), form.get('reason'), actor) });
    } catch (e) {
      // the service's messages never hold the id; anything unexpected goes to the portal's error handler
      if (!(e instanceof VeilError)) throw e;
      return render(reply, session, { kind: 'problem', code: e.code, message: e.message }, e.status);
    }
  });
}
