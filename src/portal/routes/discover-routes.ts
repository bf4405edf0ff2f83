import type { FastifyInstance } from 'fastify';
import { VeilError } from '../../engine/index.ts';
import { KINDS, type Kind } from '../../discover/index.ts';
import { mergeProposal } from '../../discover/index.ts';
import { Profiler, type Finding } from '../../discover/index.ts';
import { propose } from '../../discover/index.ts';
import { requireWithinLimits } from '../draft-limits.ts';
import { html } from '../html.ts';
import { formOf } from '../portal-deps.ts';
import type { PortalContext } from '../portal-deps.ts';
import { identityOf } from '../sessions.ts';
import { page, postForm } from '../views/layout.ts';

/** sampled records one run takes (the form's body is bounded by the portal's body limit too) */
const MAX_LINES = 10_000;
const PATH = /^(?:\(key\)|[A-Za-z0-9_$-]+(?:\[\])*(?:\.[A-Za-z0-9_$-]+(?:\[\])*)*)$/;
const TOPIC = /^[A-Za-z0-9._-]{1,249}$/;

function findingField(f: Finding): string {
  return [f.path, f.kind, f.matched, f.values].join('\t');
}

/** A finding carried by the page's draft form: paths, kinds and counts only, each checked again. */
function findingOf(text: string): Finding | undefined {
  const [path, kind, matched, values] = text.split('\t');
  const m = Number(matched);
  const v = Number(values);
  if (!path || !PATH.test(path) || !KINDS.includes(kind as Kind) || !Number.isInteger(m) || !Number.isInteger(v) || m < 1 || v < m) return undefined;
  return { path, kind: kind as Kind, matched: m, values: v, share: m / v, confidence: kind === 'person-name' || kind === 'date-of-birth' ? 'medium' : 'high' };
}

/**
 * Discovery: an editor pastes sample records (JSON lines); the portal finds the fields that hold
 * personal data and offers the proposal as a new draft (merged into the active version). The
 * pasted records are profiled in memory and dropped: never stored, logged, audited or shown
 * again — the result page holds paths, kinds and counts. Topics and tables: `veil discover`.
 */
export function registerDiscoverRoutes(app: FastifyInstance, ctx: PortalContext): void {
  const form = (session: Parameters<typeof postForm>[0]) => postForm(session, '/admin/discover', html`
<div><label for="discover-records">Sample records, one JSON document per line (use synthetic or already approved data: the records are profiled in memory and not kept)</label>
<textarea id="discover-records" name="records" spellcheck="false" wrap="off" required></textarea></div>
<div class="row"><div><label for="discover-topic">Topic they come from (optional: the draft then has a protect pipeline)</label><input type="text" id="discover-topic" name="topic" pattern="[A-Za-z0-9._\\-]{1,249}"></div>
<div><button type="submit">Find personal data</button></div></div>`, { label: 'Discover personal data' });

  app.get('/discover', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    return ctx.send(reply, page('Discovery', html`<p>Finds which fields of sample records hold personal data (validators: card numbers by Luhn and issuer, IBANs by mod 97, phone numbers by country, national ids by their checks; names and dates of birth by their field's name) and proposes how to protect them.</p>
${form(session)}`, { session, current: '/admin/discover' }));
  });

  app.post('/discover', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    const body = formOf(req);
    const topic = body.get('topic')?.trim() ?? '';
    if (topic !== '' && !TOPIC.test(topic)) throw new VeilError('REQUEST_MALFORMED', 'the topic name may hold letters, digits, ".", "_" and "-"');
    const profiler = new Profiler();
    let unparsable = 0;
    const lines = (body.get('records') ?? '').split(/\r?\n/).filter((l) => l.trim() !== '').slice(0, MAX_LINES);
    for (const line of lines) {
      try {
        profiler.add(JSON.parse(line));
      } catch {
        unparsable++;
      }
    }
    const findings = profiler.findings();
    return ctx.send(reply, page('Discovery', html`<p>Profiled ${profiler.records} record(s)${unparsable ? html`, ${unparsable} line(s) not JSON (skipped)` : ''}: ${findings.length} field(s) hold personal data.</p>
${findings.length ? html`<div class="scroll"><table><caption>Fields found</caption><thead><tr><th scope="col">Path</th><th scope="col">Kind</th><th scope="col">Matched</th><th scope="col">Share</th><th scope="col">Confidence</th></tr></thead>
<tbody>${findings.map((f) => html`<tr><th scope="row"><code>${f.path}</code></th><td>${f.kind}</td><td>${f.matched} of ${f.values}</td><td>${(f.share * 100).toFixed(1)}%</td><td>${f.confidence}</td></tr>`)}</tbody></table></div>
${postForm(session, '/admin/discover/draft', html`${findings.map((f) => html`<input type="hidden" name="finding" value="${findingField(f)}">`)}<input type="hidden" name="topic" value="${topic}">
<button type="submit">Create a draft from this proposal</button>`, { label: 'Create a draft' })}` : ''}
<h2>Another sample</h2>
${form(session)}`, { session, current: '/admin/discover' }));
  });

  app.post('/discover/draft', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    const body = formOf(req);
    const findings = body.all('finding').map(findingOf);
    const topic = body.get('topic') ?? '';
    if (findings.length === 0 || findings.some((f) => f === undefined) || (topic !== '' && !TOPIC.test(topic))) throw new VeilError('REQUEST_MALFORMED', 'the proposal is not one this page made');
    const proposal = propose(findings as Finding[], topic ? { topic } : {});
    const basedOn = ctx.versions.active();
    const text = mergeProposal(await ctx.versions.read(basedOn), proposal.yaml);
    requireWithinLimits(text);
    const draft = await ctx.versions.createDraft(basedOn, text, session.caller.subject, ctx.now(), identityOf(session.caller));
    await ctx.audit_(session, 'draft.discover', `draft ${draft.id}`, 'ok', req.id);
    return reply.code(303).header('location', `/admin/drafts/${draft.id}?done=created`).send();
  });
}
