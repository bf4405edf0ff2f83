import type { FastifyInstance } from 'fastify';
import { VeilError, type CompiledConfig } from '../../engine/index.ts';
import { isValidKeyId } from '../../keystore/index.ts';
import type { PortalContext } from '../portal-deps.ts';
import { configChoices, loadSource } from '../publisher.ts';
import { flashOf } from '../views/flash.ts';
import { auditPage } from '../views/audit-view.ts';
import { keysPage } from '../views/keys-view.ts';
import { matrixPage } from '../views/matrix-view.ts';
import { pipelinesPage } from '../views/pipelines-view.ts';
import { requireWithinLimits } from '../draft-limits.ts';
import { formOf } from '../portal-deps.ts';
import { identityOf } from '../sessions.ts';
import { buildFindingsDraft, DRAFT_FINDINGS_MAX, findingOfField } from '../unmapped-draft.ts';
import { PortalFault } from '../errors.ts';
import { KeystoreError } from '../../keystore/errors.ts';

/** records per Audit page */
const AUDIT_PAGE = 100;

/** Keys (metadata, rotate), the role × field view, pipelines and the audit trail. */
export function registerInsightRoutes(app: FastifyInstance, ctx: PortalContext): void {
  registerKeyRoutes(app, ctx);
  registerPipelineRoutes(app, ctx);

  app.get('/matrix', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const ref = (req.query as { source?: string }).source ?? `v${ctx.versions.active()}`;
    const source = await loadSource(ctx, ref);
    return ctx.send(
      reply,
      matrixPage({ session, ref, label: source.label, choices: await configChoices(ctx), ...(source.config ? { config: source.config.engine } : {}) }),
    );
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
    return ctx.send(reply, auditPage({ session, events, ...(cursor ? { cursor } : {}), ...(next ? { next } : {}) }));
  });
}

/** The Keys page and a key's rotation. */
function registerKeyRoutes(app: FastifyInstance, ctx: PortalContext): void {
  app.get('/keys', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const flash = flashOf(req.query);
    return ctx.send(
      reply,
      keysPage({
        session,
        keystorePath: ctx.keystore.path,
        keys: ctx.keystore.list(),
        users: keyUsers(ctx.holder.get().config.engine),
        ...(flash ? { flash } : {}),
      }),
    );
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
}

/** Which properties of the active configuration use each key, as `Class.property (Action)`: the Keys page's "Used by". */
function keyUsers(config: CompiledConfig): Map<string, string[]> {
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
  return users;
}

/** The Pipelines page and its "Create a draft mapping these paths". */
function registerPipelineRoutes(app: FastifyInstance, ctx: PortalContext): void {
  app.get('/pipelines', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const { config } = ctx.holder.get();
    const flash = flashOf(req.query);
    const sequenceOf = (ref: string) => {
      const [c, p] = ref.split('.') as [string, string];
      return config.engine.classes.get(c)?.get(p)?.actions.get('Protect')?.sequence ?? '?';
    };
    return ctx.send(
      reply,
      pipelinesPage({
        session,
        pipelines: Object.entries(config.pipelines),
        sequenceOf,
        ...(ctx.pipelineMetrics ? { metrics: ctx.pipelineMetrics } : {}),
        ...(flash ? { flash } : {}),
      }),
    );
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
    if (fields.length === 0 || fields.length > DRAFT_FINDINGS_MAX || findings.length !== fields.length)
      throw new VeilError('REQUEST_MALFORMED', 'the findings are not ones this page lists');
    const basedOn = ctx.versions.active();
    const activeText = await ctx.versions.read(basedOn);
    const active = ctx.configPort.compile(activeText).config;
    if (!active || !Object.hasOwn(active.pipelines, name)) throw new VeilError('REQUEST_MALFORMED', 'the active version has no such pipeline');
    let text: string;
    try {
      text = buildFindingsDraft(activeText, active, name, findings).text;
    } catch (e) {
      // every path mapped since the page was shown (or a pipeline this page cannot edit): nothing is created
      if (e instanceof PortalFault && e.code === 'NOTHING_TO_MAP') return reply.code(303).header('location', '/admin/pipelines?done=nothing-to-map').send();
      throw new VeilError('REQUEST_MALFORMED', 'the pipeline of the active version has no fields list this page can add to: edit a draft');
    }
    requireWithinLimits(text);
    const draft = await ctx.versions.createDraft(basedOn, text, session.caller.subject, ctx.now(), identityOf(session.caller));
    await ctx.audit_(session, 'draft.unmapped', `draft ${draft.id}`, 'ok', req.id);
    return reply.code(303).header('location', `/admin/drafts/${draft.id}?done=mapped`).send();
  });
}
