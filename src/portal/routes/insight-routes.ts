import type { FastifyInstance } from 'fastify';
import { configuredRoles, fieldAccess, VeilError } from '../../engine/index.ts';
import { isValidKeyId } from '../../keystore/key-material.ts';
import { html } from '../html.ts';
import type { PortalContext } from '../portal-deps.ts';
import { loadSource } from '../publisher.ts';
import { holds } from '../sessions.ts';
import { flashOf } from '../views/flash.ts';
import { page, postForm } from '../views/layout.ts';
import { pipelineMetricsView } from '../views/pipeline-metrics-view.ts';
import { unmappedFindingsView } from '../views/unmapped-findings-view.ts';
import { requireWithinLimits } from '../draft-limits.ts';
import { formOf } from '../portal-deps.ts';
import { identityOf } from '../sessions.ts';
import { buildFindingsDraft, DRAFT_FINDINGS_MAX, findingOfField, NothingToMapError } from '../unmapped-draft.ts';
import { KeystoreError } from '../../keystore/errors.ts';

/** records per Audit page */
const AUDIT_PAGE = 100;
const ACCESS_LABEL: Record<string, string> = { clear: 'clear', masked: 'masked', pseudonym: 'pseudonym', protected: 'protected', denied: 'denied' };

/** Keys (metadata, rotate), the role × field view, pipelines and the audit trail. */
export function registerInsightRoutes(app: FastifyInstance, ctx: PortalContext): void {
  app.get('/keys', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const config = ctx.holder.get().config.engine;
    const users = new Map<string, string[]>();
    for (const [className, props] of config.classes) {
      for (const [propertyName, field] of props) {
        for (const [action, plan] of field.actions) {
          for (const step of config.sequences.get(plan.sequence)?.steps ?? []) {
            const ref = 'key' in step ? config.keys.get(step.key) : undefined;
            if (!ref) continue;
            const label = `${className}.${propertyName} (${action})`;
            users.set(ref.id, [...new Set([...(users.get(ref.id) ?? []), label])]);
          }
        }
      }
    }
    const flash = flashOf(req.query);
    return ctx.send(reply, page('Keys', html`
<p>Metadata only: key material never leaves the keystore (<code>${ctx.keystore.path}</code>). Usage is that of the active version.</p>
<div class="scroll"><table><thead><tr><th scope="col">Key id</th><th scope="col">Type</th><th scope="col">Versions (created)</th><th scope="col">Primary</th><th scope="col">Used by</th><th scope="col"><span class="sr-only">Rotate</span></th></tr></thead>
<tbody>${ctx.keystore.list().map((k) => html`<tr><th scope="row">${k.id}</th><td>${k.type}</td>
<td><ul>${k.versions.map((v) => html`<li>${v.version}: ${v.createdAt} (${v.origin})</li>`)}</ul></td><td>${k.primary}</td>
<td>${(users.get(k.id) ?? []).length ? html`<ul>${users.get(k.id)!.map((u) => html`<li>${u}</li>`)}</ul>` : html`<span class="muted">no property</span>`}</td>
<td>${holds(session, 'publisher') ? postForm(session, `/admin/keys/${k.id}/rotate`, html`<button type="submit" class="secondary" aria-label="Rotate ${k.id}">Rotate</button>`) : ''}</td></tr>`)}</tbody></table></div>
<p class="muted">Rotating adds a new primary version: protect uses it unless a key reference pins a version (FPE); older versions still unprotect.</p>`, { session, current: '/admin/keys', ...(flash ? { flash } : {}) }));
  });

  app.post('/keys/:id/rotate', async (req, reply) => {
    const session = ctx.guard(req, reply, 'publisher');
    if (!session) return reply;
    const id = (req.params as { id: string }).id;
    if (!isValidKeyId(id) || !ctx.keystore.info(id)) throw new KeystoreError('KEY_NOT_FOUND', 'no such key');
    await ctx.audit_(session, 'key.rotate', `key ${id}`, 'ok', req.id);
    await ctx.keystore.rotate(id);
    return reply.code(303).header('location', '/admin/keys?done=rotated').send();
  });

  app.get('/matrix', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const ref = (req.query as { source?: string }).source ?? `v${ctx.versions.active()}`;
    const source = await loadSource(ctx, ref);
    const config = source.config?.engine;
    const fields = config ? [...config.classes].flatMap(([c, props]) => [...props.keys()].map((p) => [c, p] as const)) : [];
    const roles = config ? configuredRoles(config) : [];
    return ctx.send(reply, page('Role × field', html`
<p>What each role gets when it reads each field of ${source.label}, as the engine decides it for a call whose rights context carries just that Role: <strong>clear</strong> (Unprotect), <strong>masked</strong> or <strong>pseudonym</strong> (another granted action), <strong>protected</strong>, or <strong>denied</strong>.</p>
<form method="get" action="/admin/matrix" class="row"><div><label for="m-source">Configuration</label><select id="m-source" name="source">
${ctx.versions.versions().map((v) => html`<option value="v${v.number}"${ref === `v${v.number}` ? html` selected` : ''}>version ${v.number}</option>`)}
${(await ctx.versions.drafts()).map((d) => html`<option value="draft:${d.id}"${ref === `draft:${d.id}` ? html` selected` : ''}>draft ${d.id.slice(0, 8)}</option>`)}
</select></div><div><button type="submit" class="secondary">Show</button></div></form>
${!config ? html`<p class="error" role="alert">This configuration is invalid.</p>` : html`<div class="scroll"><table class="matrix">
<thead><tr><th scope="col">Role</th>${fields.map(([c, p]) => html`<th scope="col">${c}.${p}</th>`)}</tr></thead>
<tbody>${roles.map((role) => html`<tr><th scope="row">${role}</th>${fields.map(([c, p]) => {
  const a = fieldAccess(config, role, c, p);
  return html`<td class="access-${a.access}" title="${a.action ? `${a.action} via ${a.rightsContexts.join(', ')}` : a.code ?? ''}">${ACCESS_LABEL[a.access]}${a.action && a.action !== 'Unprotect' ? html` <span class="muted">(${a.action})</span>` : ''}</td>`;
})}</tr>`)}</tbody></table></div>`}`, { session, current: '/admin/matrix' }));
  });

  app.get('/pipelines', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const { config } = ctx.holder.get();
    const pipelines = Object.entries(config.pipelines);
    const flash = flashOf(req.query);
    const sequenceOf = (ref: string) => {
      const [c, p] = ref.split('.') as [string, string];
      return config.engine.classes.get(c)?.get(p)?.actions.get('Protect')?.sequence ?? '?';
    };
    return ctx.send(reply, page('Pipelines', html`
${pipelines.length ? pipelines.map(([name, p]) => html`<section><h2>${name}</h2>${p.description ? html`<p>${p.description}</p>` : ''}
<p>Source: ${'topics' in p.source ? p.source.topics.join(', ') : html`topics matching <code>${p.source.pattern}</code>`} → sink: ${'topic' in p.sink ? p.sink.topic : html`<code>${p.sink.rename.from}</code> → <code>${p.sink.rename.to}</code>`}; dead letters: ${p.deadLetterTopic}; ${p.format}, ${p.delivery}.</p>
<div class="scroll"><table><thead><tr><th scope="col">Record path</th><th scope="col">Field</th><th scope="col">Protecting sequence</th></tr></thead>
<tbody>${[...p.fields, ...(p.key ? [{ path: '(record key)', field: p.key.field }] : [])].map((f) => html`<tr><td><code>${f.path}</code></td><td>${f.field}</td><td>${sequenceOf(f.field)}</td></tr>`)}</tbody></table></div>
${pipelineMetricsView(name, p.metricsUrls, ctx.pipelineMetrics)}
${unmappedFindingsView(name, p, ctx.pipelineMetrics, session)}</section>`)
  : html`<p>The active version configures no pipelines (<code>pipelines:</code> section; see config/example-pipeline.yaml).</p>`}`, { session, current: '/admin/pipelines', ...(flash ? { flash } : {}) }));
  });

  // the Pipelines page's "Create a draft mapping these paths": the findings come back from the
  // browser, so each is checked again (a pipeline path, a kind veil detects, a whole count)
  app.post('/pipelines/draft', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    const body = formOf(req);
    const name = body.get('pipeline') ?? '';
    const fields = body.all('finding');
    const findings = fields.map(findingOfField).filter((f) => f !== undefined);
    if (fields.length === 0 || fields.length > DRAFT_FINDINGS_MAX || findings.length !== fields.length) throw new VeilError('REQUEST_MALFORMED', 'the findings are not ones this page lists');
    const basedOn = ctx.versions.active();
    const activeText = await ctx.versions.read(basedOn);
    const active = ctx.configPort.compile(activeText).config;
    if (!active || !Object.hasOwn(active.pipelines, name)) throw new VeilError('REQUEST_MALFORMED', 'the active version has no such pipeline');
    let text: string;
    try {
      text = buildFindingsDraft(activeText, active, name, findings).text;
    } catch (e) {
      // every path mapped since the page was shown (or a pipeline this page cannot edit): nothing is created
      if (e instanceof NothingToMapError) return reply.code(303).header('location', '/admin/pipelines?done=nothing-to-map').send();
      throw new VeilError('REQUEST_MALFORMED', 'the pipeline of the active version has no fields list this page can add to: edit a draft');
    }
    requireWithinLimits(text);
    const draft = await ctx.versions.createDraft(basedOn, text, session.caller.subject, ctx.now(), identityOf(session.caller));
    await ctx.audit_(session, 'draft.unmapped', `draft ${draft.id}`, 'ok', req.id);
    return reply.code(303).header('location', `/admin/drafts/${draft.id}?done=mapped`).send();
  });

  app.get('/audit', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const before = (req.query as { before?: string }).before;
    const cursor = typeof before === 'string' && /^[0-9.]{1,40}$/.test(before) ? before : undefined;
    // a page from the end of the log, bounded: the log itself may be as large as its rotation allows
    const { events, next } = ctx.audit.page
      ? await ctx.audit.page({ limit: AUDIT_PAGE, ...(cursor ? { cursor } : {}) })
      : { events: ctx.audit.recent ? await ctx.audit.recent(AUDIT_PAGE) : [], next: undefined };
    return ctx.send(reply, page('Audit', html`
<p>${cursor ? html`${events.length} older audit records` : html`The latest ${events.length} audit records`}, newest first. Records never hold a value.${cursor ? html` <a href="/admin/audit">Back to the latest</a>` : ''}</p>
<div class="scroll"><table><thead><tr><th scope="col">Time</th><th scope="col">Channel</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">Outcome</th></tr></thead>
<tbody>${events.map((e) => html`<tr><td>${e.time}</td><td>${e.channel}</td><td>${e.subject ?? html`<span class="muted">unknown</span>`}</td>
<td>${e.admin ? html`${e.admin.action}${e.admin.target ? html` <span class="muted">${e.admin.target}</span>` : ''}` : html`${e.fields.map((f) => html`${f.action} ${f.className}.${f.propertyName} ×${f.count} `)}${e.fields.length ? '' : html`${e.instances} value(s)`}`}</td>
<td>${e.outcome}${e.code ? html` <code>${e.code}</code>` : ''}</td></tr>`)}</tbody></table></div>
${next ? html`<p><a href="/admin/audit?before=${next}" rel="next">Older records</a></p>` : ''}`, { session, current: '/admin/audit' }));
  });
}
