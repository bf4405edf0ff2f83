import type { FastifyInstance } from 'fastify';
import { VeilError } from '../../engine/index.ts';
import { lineDiff, restartSections, unreadableWarnings } from '../config-diff.ts';
import { html } from '../html.ts';
import type { PortalContext } from '../portal-deps.ts';
import { loadSource, publish } from '../publisher.ts';
import { redactSecretHashes } from '../secret-redaction.ts';
import { holds } from '../sessions.ts';
import { flashOf } from '../views/flash.ts';
import { page, postForm } from '../views/layout.ts';

const versionNumber = (params: unknown) => {
  const n = Number((params as { n: string }).n);
  if (!Number.isInteger(n) || n < 1) throw new VeilError('NOT_FOUND', 'no such configuration version');
  return n;
};

/** Overview, published versions (view, export, revert) and the diff of any two configurations. */
export function registerVersionRoutes(app: FastifyInstance, ctx: PortalContext): void {
  const overview = async (req: import('fastify').FastifyRequest, reply: import('fastify').FastifyReply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const active = ctx.holder.get();
    const drafts = await ctx.versions.drafts();
    const flash = flashOf(req.query);
    return ctx.send(reply, page('Overview', html`
<p>The running service uses <a href="/admin/versions/${active.version}">version ${active.version}</a> (configuration hash <code>${active.config.version}</code>).
Published versions are files in <code>${ctx.versions.dir}</code>.</p>
<p>Signed in as <strong>${session.caller.subject}</strong> (${session.caller.issuer}) until ${session.expiresAt.toISOString()}; rights: ${(['viewer', 'editor', 'publisher', 'tester'] as const).filter((r) => holds(session, r)).join(', ')}.</p>
<h2>Drafts</h2>
${drafts.length ? html`<ul>${drafts.map((d) => html`<li><a href="/admin/drafts/${d.id}">Draft ${d.id.slice(0, 8)}</a> from version ${d.basedOn}, by ${d.by}, saved ${d.updatedAt}</li>`)}</ul>` : html`<p>No drafts.</p>`}
${holds(session, 'editor') ? html`
${postForm(session, '/admin/drafts', html`<input type="hidden" name="from" value="v${active.version}"><button type="submit">New draft from version ${active.version}</button>`)}
<h2>Import</h2>
${postForm(session, '/admin/drafts', html`<label for="import-yaml">Configuration YAML to import as a new draft</label><textarea id="import-yaml" name="yaml" rows="8" required></textarea><p><button type="submit">Import as draft</button></p>`)}` : ''}
`, { session, current: '/admin', ...(flash ? { flash } : {}) }));
  };
  app.get('/', overview);

  app.get('/versions', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const active = ctx.versions.active();
    const list = [...ctx.versions.versions()].reverse();
    return ctx.send(reply, page('Versions', html`
<p>Published versions are immutable and numbered; reverting publishes the old content as a new version.</p>
<div class="scroll"><table>
<thead><tr><th scope="col">Version</th><th scope="col">Published</th><th scope="col">By</th><th scope="col">Note</th><th scope="col">Actions</th></tr></thead>
<tbody>${list.map((v) => html`<tr><td><a href="/admin/versions/${v.number}">${v.number}</a>${v.number === active ? html` <strong>(active)</strong>` : ''}</td><td>${v.publishedAt}</td><td>${v.by}</td><td>${v.note}</td>
<td><a href="/admin/versions/${v.number}/export">Export</a>${v.number > 1 ? html` · <a href="/admin/diff?from=v${v.number - 1}&amp;to=v${v.number}">Diff with ${v.number - 1}</a>` : ''}</td></tr>`)}</tbody>
</table></div>
<p><a href="/admin/diff">Compare any two versions or drafts</a></p>`, { session, current: '/admin/versions', ...(flashOf(req.query) ? { flash: flashOf(req.query)! } : {}) }));
  });

  app.get('/versions/:n', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const n = versionNumber(req.params);
    const source = await loadSource(ctx, `v${n}`);
    return ctx.send(reply, page(`Version ${n}`, html`
<p>${source.label}. File: <code>${ctx.versions.file(n)}</code>. <a href="/admin/versions/${n}/export">Export YAML</a></p>
<div class="row">
${holds(session, 'editor') ? postForm(session, '/admin/drafts', html`<input type="hidden" name="from" value="v${n}"><button type="submit">New draft from this version</button>`) : ''}
${holds(session, 'publisher') && n !== ctx.versions.active() ? postForm(session, `/admin/versions/${n}/revert`, html`<button type="submit" class="secondary">Revert to this version</button>`) : ''}
</div>
<h2>YAML</h2><pre>${source.shown}</pre>`, { session, current: '/admin/versions' }));
  });

  app.get('/versions/:n/export', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const n = versionNumber(req.params);
    const text = redactSecretHashes(await ctx.versions.read(n));
    return reply.type('application/yaml; charset=utf-8').header('content-disposition', `attachment; filename="veil-config-v${n}.yaml"`).send(text);
  });

  app.post('/versions/:n/revert', async (req, reply) => {
    const session = ctx.guard(req, reply, 'publisher');
    if (!session) return reply;
    const n = versionNumber(req.params);
    const text = await ctx.versions.read(n);
    const before = ctx.versions.active();
    try {
      const number = await publish(ctx, text, { by: session.caller.subject, note: `revert to version ${n}`, tests: [] });
      await ctx.audit_(session, 'revert', `version ${n} as ${number}`, 'ok', req.id);
      return reply.code(303).header('location', `/admin/diff?from=v${before}&to=v${number}&done=reverted`).send();
    } catch (e) {
      await ctx.audit_(session, 'revert', `version ${n}`, 'failed', req.id);
      throw e;
    }
  });

  app.get('/diff', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const q = req.query as { from?: string; to?: string };
    const refs = [...ctx.versions.versions().map((v) => ({ ref: `v${v.number}`, label: `version ${v.number}` })), ...(await ctx.versions.drafts()).map((d) => ({ ref: `draft:${d.id}`, label: `draft ${d.id.slice(0, 8)}` }))];
    const active = `v${ctx.versions.active()}`;
    const from = q.from ?? active;
    const to = q.to ?? active;
    const [a, b] = [await loadSource(ctx, from), await loadSource(ctx, to)];
    const warnings = unreadableWarnings(a.text, b.text);
    const restart = restartSections(a.text, b.text);
    const lines = lineDiff(a.shown, b.shown);
    const picker = (name: string, selected: string, label: string) => html`<div><label for="diff-${name}">${label}</label><select id="diff-${name}" name="${name}">${refs.map((r) => html`<option value="${r.ref}"${r.ref === selected ? html` selected` : ''}>${r.label}</option>`)}</select></div>`;
    const flash = flashOf(req.query);
    return ctx.send(reply, page('Diff', html`
<form method="get" action="/admin/diff" class="row">${picker('from', from, 'From')}${picker('to', to, 'To')}<div><button type="submit">Compare</button></div></form>
<h2>${a.label} → ${b.label}</h2>
${warnings.length ? html`<div role="alert"><h3 class="warning">Stored data would become unreadable</h3><ul>${warnings.map((w) => html`<li class="warning">${w}</li>`)}</ul></div>` : html`<p class="ok">No change makes stored data unreadable.</p>`}
${restart.length ? html`<p class="warning">Changes to ${restart.join(', ')} take effect when the service restarts; publishing swaps keys, sequences, classes and contexts at once.</p>` : ''}
${lines.every((l) => l.op === ' ') ? html`<p>The two are identical.</p>` : ''}
<pre class="diff">${lines.map((l) => html`<span class="${l.op === '+' ? 'diff-add' : l.op === '-' ? 'diff-del' : 'diff-same'}">${l.op} ${l.text}</span>`)}</pre>`, { session, current: '/admin/versions', ...(flash ? { flash } : {}) }));
  });

}
