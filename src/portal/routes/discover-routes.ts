import type { FastifyInstance } from 'fastify';
import { VeilError } from '../../engine/index.ts';
import { KINDS, type Kind } from '../../discover/index.ts';
import { mergeProposal } from '../../discover/index.ts';
import { Profiler, type Finding } from '../../discover/index.ts';
import { propose } from '../../discover/index.ts';
import { requireWithinLimits } from '../draft-limits.ts';
import { formOf } from '../portal-deps.ts';
import type { PortalContext } from '../portal-deps.ts';
import { identityOf } from '../sessions.ts';
import { discoverPage, discoverResultPage } from '../views/discover-view.ts';

/** sampled records one run takes (the form's body is bounded by the portal's body limit too) */
const MAX_LINES = 10_000;
const PATH = /^(?:\(key\)|[A-Za-z0-9_$-]+(?:\[\])*(?:\.[A-Za-z0-9_$-]+(?:\[\])*)*)$/;
const TOPIC = /^[A-Za-z0-9._-]{1,249}$/;

/** A finding carried by the page's draft form (findingField, views/discover-view.ts): paths, kinds and counts only, each checked again. */
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
  app.get('/discover', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    return ctx.send(reply, discoverPage(session));
  });

  app.post('/discover', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    const body = formOf(req);
    const topic = body.get('topic')?.trim() ?? '';
    if (topic !== '' && !TOPIC.test(topic)) throw new VeilError('REQUEST_MALFORMED', 'the topic name may hold letters, digits, ".", "_" and "-"');
    const profiler = new Profiler();
    let unparsable = 0;
    const lines = (body.get('records') ?? '')
      .split(/\r?\n/)
      .filter((l) => l.trim() !== '')
      .slice(0, MAX_LINES);
    for (const line of lines) {
      try {
        profiler.add(JSON.parse(line));
      } catch {
        unparsable++;
      }
    }
    return ctx.send(reply, discoverResultPage({ session, profiled: profiler.records, unparsable, findings: profiler.findings(), topic }));
  });

  app.post('/discover/draft', async (req, reply) => {
    const session = ctx.guard(req, reply, 'editor');
    if (!session) return reply;
    const body = formOf(req);
    const findings = body.all('finding').map(findingOf);
    const topic = body.get('topic') ?? '';
    if (findings.length === 0 || findings.some((f) => f === undefined) || (topic !== '' && !TOPIC.test(topic)))
      throw new VeilError('REQUEST_MALFORMED', 'the proposal is not one this page made');
    const proposal = propose(findings as Finding[], topic ? { topic } : {});
    const basedOn = ctx.versions.active();
    const text = mergeProposal(await ctx.versions.read(basedOn), proposal.yaml);
    requireWithinLimits(text);
    const draft = await ctx.versions.createDraft(basedOn, text, session.caller.subject, ctx.now(), identityOf(session.caller));
    await ctx.audit_(session, 'draft.discover', `draft ${draft.id}`, 'ok', req.id);
    return reply.code(303).header('location', `/admin/drafts/${draft.id}?done=created`).send();
  });
}
