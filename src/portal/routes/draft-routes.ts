import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { VeilError } from '../../engine/index.ts';
import type { TestCase } from '../../control/index.ts';
import { applyConfigForm, renderConfigForm } from '../config-form.ts';
import { html } from '../html.ts';
import { formOf, type PortalContext } from '../portal-deps.ts';
import { DRAFT_LIMITS, requireWithinLimits } from '../draft-limits.ts';
import { loadSource, publish, runSavedTests, textHash, type Source, type TestOutcome } from '../publisher.ts';
import { redactSecretHashes, restoreSecretHashes } from '../secret-redaction.ts';
import { holds, identityOf, type Session } from '../sessions.ts';
import { flashOf } from '../views/flash.ts';
import { page, postForm } from '../views/layout.ts';
import { PortalError } from '../errors.ts';

const EXPECTATIONS: readonly TestCase['expect'][] = ['round-trip', 'denied', 'masked', 'changed'];
const idOf = (req: FastifyRequest) => (req.params as { id: string }).id;

/** Whether the signed-in admin wrote this draft's text or test cases (four eyes: then they may not publish it). */
const edited = (session: Session, meta: { editors?: string[]; by: string }) =>
  meta.editors ? meta.editors.includes(identityOf(session.caller)) : meta.by === session.caller.subject;

/** Drafts: create (from a version or imported YAML), edit as a form or as YAML, test cases, publish, export, delete. */
export function registerDraftRoutes(app: FastifyInstance, ctx: PortalContext): void {
  const view = async (req: FastifyRequest, reply: FastifyReply, session: Session, source: Source, status = 200) => {
    const id = source.draftId!;
    const errors = source.issues.filter((i) => i.severity === 'error');
    const { form, unplaced } = renderConfigForm(source.shown, source.issues);
    // the saved test cases run in the sandbox thread; a busy or slow sandbox leaves them "not run"
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
    const editor = holds(session, 'editor');
    const meta = await ctx.versions.draft(id);
    const selfReview = ctx.portal.fourEyes && edited(session, meta);
    const flash = flashOf(req.query);
    return ctx.send(reply, page(`Draft ${id.slice(0, 8)}`, html`
<p>${source.label}. <a href="/admin/diff?from=v${ctx.versions.active()}&amp;to=draft:${id}">Diff with the active version</a> · <a href="/admin/drafts/${id}/export">Export YAML</a> · <a href="/admin/tester?source=draft:${id}">Test it</a>${editor ? '' : html` · <span class="muted">read only: editing needs the editor right</span>`}</p>
<section aria-labelledby="validation"><h2 id="validation">Validation</h2>
${errors.length ? html`<div role="alert" class="error"><p>${errors.length} error(s): the draft cannot be published.</p><ul>${errors.map((i) => html`<li><code>${i.pointer || '/'}</code>: ${i.message}</li>`)}</ul></div>` : html`<p class="ok">Valid${source.issues.length ? html` with ${source.issues.length} warning(s)` : ''}.</p>`}
${unplaced.length ? html`<ul>${unplaced.filter((i) => i.severity === 'warning').map((i) => html`<li class="warning">${i.pointer || '/'}: ${i.message}</li>`)}</ul>` : ''}
</section>
<div class="row">
${holds(session, 'publisher') && !selfReview ? postForm(session, `/admin/drafts/${id}/publish`, html`<input type="hidden" name="reviewed" value="${textHash(source.text)}"><button type="submit">Publish this draft</button>`) : ''}
${holds(session, 'publisher') && selfReview ? html`<p class="muted">Four eyes: you edited this draft, so another publisher must publish it.</p>` : ''}
${editor ? postForm(session, `/admin/drafts/${id}/delete`, html`<button type="submit" class="secondary">Delete draft</button>`) : ''}
</div>
<div class="split">
<section aria-labelledby="form-title"><h2 id="form-title">Form</h2>
${postForm(session, `/admin/drafts/${id}/fields`, html`${form}${editor ? html`<p><button type="submit">Save fields</button></p>` : ''}`, { label: 'Configuration form' })}
<p class="muted">Add, rename or remove entries, and edit identity, service and pipelines, in the YAML.</p></section>
<section aria-labelledby="yaml-title" class="yaml-pane"><h2 id="yaml-title">YAML</h2>
${postForm(session, `/admin/drafts/${id}/yaml`, html`<label for="draft-yaml">The whole configuration</label><textarea id="draft-yaml" name="yaml" spellcheck="false" wrap="off">${source.shown}</textarea>${editor ? html`<p><button type="submit">Save YAML</button></p>` : ''}`, { label: 'Configuration YAML' })}
</section>
</div>
<section aria-labelledby="tests-title"><h2 id="tests-title">Saved test cases</h2>
<p>Run on sandbox keys against this draft; every one must pass before the draft can be published.</p>
<div class="scroll"><table><thead><tr><th scope="col">Name</th><th scope="col">Field</th><th scope="col">Role</th><th scope="col">Action</th><th scope="col">Expect</th><th scope="col">Result</th><th scope="col"><span class="sr-only">Delete</span></th></tr></thead><tbody>
${source.tests.map((t) => {
  const o = outcomes.find((x) => x.test.id === t.id);
  return html`<tr><td>${t.name}</td><td>${t.className}.${t.propertyName}</td><td>${t.role}</td><td>${t.action}</td><td>${t.expect}</td><td>${o ? html`<span class="${o.pass ? 'ok' : 'error'}">${o.pass ? 'pass' : `fail: got ${o.got}`}</span>` : notRun}</td>
<td>${editor ? postForm(session, `/admin/drafts/${id}/tests/delete`, html`<input type="hidden" name="test" value="${t.id}"><button type="submit" class="secondary">Delete</button>`, { class: 'inline' }) : ''}</td></tr>`;
})}</tbody></table></div>
${editor ? postForm(session, `/admin/drafts/${id}/tests`, html`<div class="row">
<div><label for="tc-name">Name</label><input type="text" id="tc-name" name="name" required maxlength="100"></div>
<div><label for="tc-field">Field (Class.property)</label><input type="text" id="tc-field" name="field" required pattern="[A-Za-z][A-Za-z0-9_-]*\\.[A-Za-z][A-Za-z0-9_-]*"></div>
<div><label for="tc-role">Role</label><input type="text" id="tc-role" name="role" required></div>
<div><label for="tc-action">Action</label><input type="text" id="tc-action" name="action" value="Unprotect" required></div>
<div><label for="tc-value">Test value (stored with the draft: use synthetic data)</label><input type="text" id="tc-value" name="value" required maxlength="${DRAFT_LIMITS.valueLength}"></div>
<div><label for="tc-expect">Expect</label><select id="tc-expect" name="expect">${EXPECTATIONS.map((e) => html`<option>${e}</option>`)}</select></div>
<div><button type="submit">Add test case</button></div></div>`, { label: 'Add a test case' }) : ''}
</section>`, { session, current: '/admin/versions', ...(flash ? { flash } : {}) }), status);
  };

  app.post('/drafts', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    const form = formOf(req);
    const from = form.get('from');
    const imported = form.get('yaml');
    const basedOn = from ? Number(from.replace(/^v/, '')) : ctx.versions.active();
    // an imported export holds hidden secret hashes: those of the active version are put back
    const text = imported === undefined ? await ctx.versions.read(basedOn) : restoreSecretHashes(imported.replace(/\r\n/g, '\n'), await ctx.versions.read(ctx.versions.active()));
    if (imported !== undefined) requireWithinLimits(text);
    const draft = await ctx.versions.createDraft(basedOn, text, session.caller.subject, ctx.now(), identityOf(session.caller));
    await ctx.audit_(session, imported === undefined ? 'draft.create' : 'draft.import', `draft ${draft.id}`, 'ok', req.id);
    return reply.code(303).header('location', `/admin/drafts/${draft.id}?done=created`).send();
  });

  app.get('/drafts/:id', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    return view(req, reply, session, await loadSource(ctx, `draft:${idOf(req)}`));
  });

  app.get('/drafts/:id/export', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const text = redactSecretHashes(await ctx.versions.draftText(idOf(req)));
    return reply.type('application/yaml; charset=utf-8').header('content-disposition', `attachment; filename="veil-draft-${idOf(req).slice(0, 8)}.yaml"`).send(text);
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
      if (source.issues.some((i) => i.severity === 'error')) return view(req, reply, session, source, 422);
      return reply.code(303).header('location', `/admin/drafts/${id}?done=saved`).send();
    });
  };
  save('fields', (text, req) => applyConfigForm(text, formOf(req).entries()));
  save('yaml', (_text, req) => (formOf(req).get('yaml') ?? '').replace(/\r\n/g, '\n'));

  app.post('/drafts/:id/tests', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    const id = idOf(req);
    const form = formOf(req);
    const [className, propertyName] = (form.get('field') ?? '').split('.');
    const expect = form.get('expect') as TestCase['expect'];
    const test: TestCase = {
      id: randomUUID(), name: (form.get('name') ?? '').slice(0, 100), className: className ?? '', propertyName: propertyName ?? '',
      role: form.get('role') ?? '', action: form.get('action') ?? 'Unprotect', value: form.get('value') ?? '', expect,
    };
    if (!test.name || !test.className || !test.propertyName || !test.role || !EXPECTATIONS.includes(expect)) throw new VeilError('REQUEST_MALFORMED', 'a test case needs a name, Class.property, a role, an action and an expectation');
    if (test.value.length > DRAFT_LIMITS.valueLength) throw new PortalError('DRAFT_LIMIT_EXCEEDED', `a test value has at most ${DRAFT_LIMITS.valueLength} characters`, { details: [{ code: 'DRAFT_LIMIT_EXCEEDED', pointer: '/value', message: 'too long' }] });
    const meta = await ctx.versions.draft(id);
    if (meta.tests.length >= DRAFT_LIMITS.tests) throw new PortalError('DRAFT_LIMIT_EXCEEDED', `a draft holds at most ${DRAFT_LIMITS.tests} test cases`, { details: [{ code: 'DRAFT_LIMIT_EXCEEDED', pointer: '/tests', message: 'too many test cases' }] });
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
      if (formOf(req).get('reviewed') !== textHash(text)) throw new PortalError('DRAFT_CHANGED', 'the draft changed after you reviewed it (or the form did not say what you reviewed): review it again and publish from its page');
      if (ctx.portal.fourEyes && edited(session, meta)) throw new PortalError('FOUR_EYES_REQUIRED', 'you edited this draft: another publisher must review and publish it');
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
