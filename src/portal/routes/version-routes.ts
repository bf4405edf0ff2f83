import type { FastifyInstance } from 'fastify';
import { VeilError } from '../../engine/index.ts';
import { lineDiff, restartSections, unreadableWarnings } from '../config-diff.ts';
import type { PortalContext } from '../portal-deps.ts';
import { configChoices, loadSource, publish } from '../publisher.ts';
import { redactSecretHashes } from '../secret-redaction.ts';
import { flashOf } from '../views/flash.ts';
import { diffPage, overviewPage, versionPage, versionsPage } from '../views/versions-view.ts';

const versionNumber = (params: unknown) => {
  const n = Number((params as { n: string }).n);
  if (!Number.isInteger(n) || n < 1) throw new VeilError('NOT_FOUND', 'no such configuration version');
  return n;
};

/** Overview, published versions (view, export, revert) and the diff of any two configurations. */
export function registerVersionRoutes(app: FastifyInstance, ctx: PortalContext): void {
  registerVersionLists(app, ctx);
  registerVersionPage(app, ctx);
  registerDiffPage(app, ctx);
}

/** The Overview page (the active version, the drafts) and the Versions page (every published version). */
function registerVersionLists(app: FastifyInstance, ctx: PortalContext): void {
  app.get('/', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const flash = flashOf(req.query);
    return ctx.send(
      reply,
      overviewPage({ session, active: ctx.holder.get(), versionsDir: ctx.versions.dir, drafts: await ctx.versions.drafts(), ...(flash ? { flash } : {}) }),
    );
  });

  app.get('/versions', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const flash = flashOf(req.query);
    return ctx.send(
      reply,
      versionsPage({ session, versions: [...ctx.versions.versions()].reverse(), active: ctx.versions.active(), ...(flash ? { flash } : {}) }),
    );
  });
}

/** A published version's page, its export and its revert (published again as a new version). */
function registerVersionPage(app: FastifyInstance, ctx: PortalContext): void {
  app.get('/versions/:n', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const n = versionNumber(req.params);
    const source = await loadSource(ctx, `v${n}`);
    return ctx.send(reply, versionPage({ session, n, label: source.label, file: ctx.versions.file(n), shown: source.shown, active: ctx.versions.active() }));
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
}

/** The Diff page: any two versions or drafts, line by line, with the sections that need a restart and the changes that leave stored values unreadable. */
function registerDiffPage(app: FastifyInstance, ctx: PortalContext): void {
  app.get('/diff', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const q = req.query as { from?: string; to?: string };
    const choices = await configChoices(ctx);
    const active = `v${ctx.versions.active()}`;
    const from = q.from ?? active;
    const to = q.to ?? active;
    const [a, b] = [await loadSource(ctx, from), await loadSource(ctx, to)];
    const flash = flashOf(req.query);
    return ctx.send(
      reply,
      diffPage({
        session,
        choices,
        from,
        to,
        fromLabel: a.label,
        toLabel: b.label,
        warnings: unreadableWarnings(a.text, b.text),
        restart: restartSections(a.text, b.text),
        lines: lineDiff(a.shown, b.shown),
        ...(flash ? { flash } : {}),
      }),
    );
  });
}
