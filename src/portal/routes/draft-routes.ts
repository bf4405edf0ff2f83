import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { VeilError } from '../../engine/index.ts';
import type { TestCase } from '../../control/index.ts';
import { applyConfigForm, renderConfigForm } from '../config-form.ts';
import { formOf, type PortalContext } from '../portal-deps.ts';
import { DRAFT_LIMITS, requireWithinLimits } from '../draft-limits.ts';
import { loadSource, publish, runSavedTests, textHash, type Source, type TestOutcome } from '../publisher.ts';
import { redactSecretHashes, restoreSecretHashes } from '../secret-redaction.ts';
import { holds, identityOf, type Session } from '../sessions.ts';
import { draftPage, EXPECTATIONS } from '../views/draft-view.ts';
import { flashOf } from '../views/flash.ts';
import { PortalError } from '../errors.ts';

const idOf = (req: FastifyRequest) => (req.params as { id: string }).id;

/** Whether the signed-in admin wrote this draft's text or test cases (four eyes: then they may not publish it). */
const edited = (session: Session, meta: { editors?: string[]; by: string }) =>
  meta.editors ? meta.editors.includes(identityOf(session.caller)) : meta.by === session.caller.subject;

/** A draft's page: its saved test cases run in the sandbox first, a busy or slow sandbox leaving them "not run". */
async function showDraft(ctx: PortalContext, req: FastifyRequest, reply: FastifyReply, session: Session, source: Source, status = 200) {
  let outcomes: TestOutcome[] = [];
  let notRun = 'not run (draft invalid)';
  if (source.config) {
    try {
      outcomes = await runSavedTests(ctx.sandbox, source.text, source.tests);
    } catch (e) {
      if (!(e instanceof VeilError)) throw e;
      notRun = `not run: ${e.code}`;
    }
  }
  const meta = await ctx.versions.draft(source.draftId!);
  const { form, unplaced } = renderConfigForm(source.shown, source.issues);
  const flash = flashOf(req.query);
  return ctx.send(
    reply,
    draftPage({
      session,
      source,
      form,
      unplaced,
      outcomes,
      notRun,
      editor: holds(session, 'editor'),
      publisher: holds(session, 'publisher'),
      selfReview: ctx.portal.fourEyes && edited(session, meta),
      activeVersion: ctx.versions.active(),
      reviewedHash: textHash(source.text),
      ...(flash ? { flash } : {}),
    }),
    status,
  );
}

/** Drafts: create (from a version or imported YAML), edit as a form or as YAML, test cases, publish, export, delete. */
export function registerDraftRoutes(app: FastifyInstance, ctx: PortalContext): void {
  registerDraftEditing(app, ctx);
  registerDraftTests(app, ctx);
  registerDraftPublishing(app, ctx);
}

/** Create, show, export and save a draft (as the form or as YAML). */
function registerDraftEditing(app: FastifyInstance, ctx: PortalContext): void {
  app.post('/drafts', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    const form = formOf(req);
    const from = form.get('from');
    const imported = form.get('yaml');
    const basedOn = from ? Number(from.replace(/^v/, '')) : ctx.versions.active();
    // an imported export holds hidden secret hashes: those of the active version are put back
    const text =
      imported === undefined
        ? await ctx.versions.read(basedOn)
        : restoreSecretHashes(imported.replace(/\r\n/g, '\n'), await ctx.versions.read(ctx.versions.active()));
    if (imported !== undefined) requireWithinLimits(text);
    const draft = await ctx.versions.createDraft(basedOn, text, session.caller.subject, ctx.now(), identityOf(session.caller));
    await ctx.audit_(session, imported === undefined ? 'draft.create' : 'draft.import', `draft ${draft.id}`, 'ok', req.id);
    return reply.code(303).header('location', `/admin/drafts/${draft.id}?done=created`).send();
  });

  app.get('/drafts/:id', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    return showDraft(ctx, req, reply, session, await loadSource(ctx, `draft:${idOf(req)}`));
  });

  app.get('/drafts/:id/export', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const text = redactSecretHashes(await ctx.versions.draftText(idOf(req)));
    return reply
      .type('application/yaml; charset=utf-8')
      .header('content-disposition', `attachment; filename="veil-draft-${idOf(req).slice(0, 8)}.yaml"`)
      .send(text);
  });

  const save = (suffix: string, change: (text: string, req: FastifyRequest) => string) => {
    app.post(`/drafts/:id/${suffix}`, async (req, reply) => {
      const session = ctx.guard(req, reply, 'editor');
      if (!session) return reply;
      const id = idOf(req);
      const stored = await ctx.versions.draftText(id);
      // the page showed hidden secret hashes: what comes back gets the stored ones again
      const text = restoreSecretHashes(change(stored, req), stored);
      requireWithinLimits(text);
      await ctx.versions.saveDraft(id, { text }, ctx.now(), identityOf(session.caller));
      await ctx.audit_(session, `draft.${suffix}`, `draft ${id}`, 'ok', req.id);
      const source = await loadSource(ctx, `draft:${id}`);
      // errors stay on the page with the form as submitted; a valid draft redirects
      if (source.issues.some((i) => i.severity === 'error')) return showDraft(ctx, req, reply, session, source, 422);
      return reply.code(303).header('location', `/admin/drafts/${id}?done=saved`).send();
    });
  };
  save('fields', (text, req) => applyConfigForm(text, formOf(req).entries()));
  save('yaml', (_text, req) => (formOf(req).get('yaml') ?? '').replace(/\r\n/g, '\n'));
}

/** A draft's saved test cases: add, delete. */
function registerDraftTests(app: FastifyInstance, ctx: PortalContext): void {
  app.post('/drafts/:id/tests', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    const id = idOf(req);
    const form = formOf(req);
    const [className, propertyName] = (form.get('field') ?? '').split('.');
    const expect = form.get('expect') as TestCase['expect'];
    const test: TestCase = {
      id: randomUUID(),
      name: (form.get('name') ?? '').slice(0, 100),
      className: className ?? '',
      propertyName: propertyName ?? '',
      role: form.get('role') ?? '',
      action: form.get('action') ?? 'Unprotect',
      value: form.get('value') ?? '',
      expect,
    };
    if (!test.name || !test.className || !test.propertyName || !test.role || !EXPECTATIONS.includes(expect))
      throw new VeilError('REQUEST_MALFORMED', 'a test case needs a name, Class.property, a role, an action and an expectation');
    if (test.value.length > DRAFT_LIMITS.valueLength)
      throw new PortalError('DRAFT_LIMIT_EXCEEDED', `a test value has at most ${DRAFT_LIMITS.valueLength} characters`, {
        details: [{ code: 'DRAFT_LIMIT_EXCEEDED', pointer: '/value', message: 'too long' }],
      });
    const meta = await ctx.versions.draft(id);
    if (meta.tests.length >= DRAFT_LIMITS.tests)
      throw new PortalError('DRAFT_LIMIT_EXCEEDED', `a draft holds at most ${DRAFT_LIMITS.tests} test cases`, {
        details: [{ code: 'DRAFT_LIMIT_EXCEEDED', pointer: '/tests', message: 'too many test cases' }],
      });
    await ctx.versions.saveDraft(id, { tests: [...meta.tests, test] }, ctx.now(), identityOf(session.caller));
    await ctx.audit_(session, 'draft.test-add', `draft ${id}`, 'ok', req.id);
    return reply.code(303).header('location', `/admin/drafts/${id}?done=test-added#tests-title`).send();
  });

  app.post('/drafts/:id/tests/delete', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    const id = idOf(req);
    const meta = await ctx.versions.draft(id);
    await ctx.versions.saveDraft(id, { tests: meta.tests.filter((t) => t.id !== formOf(req).get('test')) }, ctx.now(), identityOf(session.caller));
    await ctx.audit_(session, 'draft.test-delete', `draft ${id}`, 'ok', req.id);
    return reply.code(303).header('location', `/admin/drafts/${id}?done=test-deleted`).send();
  });
}

/** Delete a draft, or publish it (as reviewed, four eyes, within the limits). */
function registerDraftPublishing(app: FastifyInstance, ctx: PortalContext): void {
  app.post('/drafts/:id/delete', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    await ctx.versions.deleteDraft(idOf(req));
    await ctx.audit_(session, 'draft.delete', `draft ${idOf(req)}`, 'ok', req.id);
    return reply.code(303).header('location', '/admin?done=deleted').send();
  });

  app.post('/drafts/:id/publish', async (req, reply) => {
    const session = ctx.guard(req, reply, 'publisher');
    if (!session) return reply;
    const id = idOf(req);
    const meta = await ctx.versions.draft(id);
    const before = ctx.versions.active();
    let number: number;
    try {
      // the text is read once: the one compared with what the publisher reviewed is the one published
      const text = await ctx.versions.draftText(id);
      if (formOf(req).get('reviewed') !== textHash(text))
        throw new PortalError(
          'DRAFT_CHANGED',
          'the draft changed after you reviewed it (or the form did not say what you reviewed): review it again and publish from its page',
        );
      if (ctx.portal.fourEyes && edited(session, meta))
        throw new PortalError('FOUR_EYES_REQUIRED', 'you edited this draft: another publisher must review and publish it');
      requireWithinLimits(text);
      number = await publish(ctx, text, { by: session.caller.subject, note: `draft ${id.slice(0, 8)} from version ${meta.basedOn}`, tests: meta.tests });
    } catch (e) {
      await ctx.audit_(session, 'publish', `draft ${id}`, 'failed', req.id);
      throw e;
    }
    await ctx.audit_(session, 'publish', `draft ${id} as version ${number}`, 'ok', req.id);
    await ctx.versions.deleteDraft(id);
    return reply.code(303).header('location', `/admin/diff?from=v${before}&to=v${number}&done=published`).send();
  });
}
