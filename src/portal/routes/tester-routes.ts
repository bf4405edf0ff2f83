import type { FastifyInstance, FastifyReply } from 'fastify';
import { configuredRoles } from '../../engine/index.ts';
import { DRAFT_LIMITS } from '../draft-limits.ts';
import { loadSource, type Source } from '../publisher.ts';
import { formOf, type PortalContext } from '../portal-deps.ts';
import { holds, type Session } from '../sessions.ts';
import { runTester, type TesterRun } from '../tester.ts';
import { testerPage, type TesterChoice } from '../views/tester-view.ts';
import { PortalError } from '../errors.ts';

/**
 * GET/POST /admin/tester: Protect then a reading action on given values. Sandbox keys (the
 * session's, random, in memory) for any version or draft and any role; live keys only on the
 * active version, for an admin with the tester right, with the admin's own identity — so only roles
 * the admin holds pass, and every unprotect is audited by GuardedTransform like one over HTTP.
 * Values are neither stored nor logged: they live in this request and the page it returns.
 */
export function registerTesterRoutes(app: FastifyInstance, ctx: PortalContext): void {
  app.get('/tester', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const q = req.query as { source?: string; className?: string };
    const source = await loadSource(ctx, q.source ?? `v${ctx.versions.active()}`);
    const first = q.className && source.config?.engine.classes.has(q.className) ? q.className : source.config?.engine.classes.keys().next().value;
    const choice: TesterChoice = {
      source: source.ref,
      className: first ?? '',
      role: source.config ? (configuredRoles(source.config.engine)[0] ?? '') : '',
      action: 'Unprotect',
      keys: 'sandbox',
      values: {},
    };
    return render(ctx, reply, session, choice, source);
  });

  app.post('/tester', async (req, reply) => {
    const session = ctx.guard(req, reply, 'viewer');
    if (!session) return reply;
    const form = formOf(req);
    const values: Record<string, string> = {};
    for (const [name, value] of form.entries()) if (name.startsWith('value:') && value !== '') values[name.slice(6)] = value.slice(0, DRAFT_LIMITS.valueLength);
    if (Object.keys(values).length > DRAFT_LIMITS.testerValues)
      throw new PortalError('DRAFT_LIMIT_EXCEEDED', `the tester takes at most ${DRAFT_LIMITS.testerValues} values at once`);
    const choice: TesterChoice = {
      source: form.get('source') ?? `v${ctx.versions.active()}`,
      className: form.get('className') ?? '',
      role: form.get('role') ?? '',
      action: form.get('action') ?? 'Unprotect',
      keys: form.get('keys') === 'live' ? 'live' : 'sandbox',
      values,
    };
    const source = await loadSource(ctx, choice.source);
    const run = await runChoice(ctx, session, choice, source);
    return typeof run === 'string' ? render(ctx, reply, session, choice, source, undefined, run) : render(ctx, reply, session, choice, source, run);
  });
}

/**
 * The tester's run of the choice, or why it did not run (shown on the page): live keys need the
 * tester right (else ADMIN_ROLE_MISSING) and the active version; sandbox keys run in the sandbox
 * thread.
 */
async function runChoice(ctx: PortalContext, session: Session, choice: TesterChoice, source: Source): Promise<TesterRun | string> {
  const config = source.config;
  if (!config) return 'This configuration is invalid: fix the draft first.';
  const props = config.engine.classes.get(choice.className);
  if (!props) return 'Pick a class of this configuration.';
  const entries = [...props.keys()].filter((p) => Object.hasOwn(choice.values, p)).map((p) => [p, choice.values[p]!] as [string, string]);
  if (!entries.length) return 'Give a value for at least one property.';
  if (choice.keys === 'live') {
    if (!holds(session, 'tester')) throw new PortalError('ADMIN_ROLE_MISSING', 'live keys need the tester right (role admin-tester)');
    const active = ctx.holder.get();
    if (source.ref !== `v${active.version}`) return 'Live keys run only on the active version: a draft could grant what the running service does not.';
    return runTester(
      { config: active.config.engine, engine: active.engine, keys: ctx.keystore, audit: ctx.audit, caller: session.caller, now: ctx.now },
      { ...choice, values: entries },
    );
  }
  // in the sandbox thread, on keys derived from the session's seed: a draft cannot hold this thread
  const caller = { roles: [choice.role], clientId: session.caller.clientId, subject: session.caller.subject, issuer: session.caller.issuer };
  const sandboxRun = await ctx.sandbox.run({
    kind: 'tester',
    text: source.text,
    seed: session.sandbox.seed,
    caller,
    input: { className: choice.className, role: choice.role, action: choice.action, values: entries },
  });
  return sandboxRun ?? 'This configuration is invalid: fix the draft first.';
}

/** The versions and drafts the tester can run on, newest version first. */
async function testerSources(ctx: PortalContext): Promise<{ ref: string; label: string }[]> {
  return [
    ...[...ctx.versions.versions()]
      .reverse()
      .map((v) => ({ ref: `v${v.number}`, label: `version ${v.number}${v.number === ctx.versions.active() ? ' (active)' : ''}` })),
    ...(await ctx.versions.drafts()).map((d) => ({ ref: `draft:${d.id}`, label: `draft ${d.id.slice(0, 8)}` })),
  ];
}

/** The tester page for the choice on its configuration: its classes, roles and reading actions, the run's results or the problem. */
async function render(ctx: PortalContext, reply: FastifyReply, session: Session, choice: TesterChoice, source: Source, run?: TesterRun, problem?: string) {
  const config = source.config;
  return ctx.send(
    reply,
    testerPage({
      session,
      choice,
      sources: await testerSources(ctx),
      source,
      classes: config ? [...config.engine.classes.entries()].map(([name, props]) => ({ name, properties: [...props.keys()] })) : [],
      roles: config ? configuredRoles(config.engine) : [],
      actions: config
        ? [...new Set([...config.engine.classes.values()].flatMap((p) => [...p.values()].flatMap((f) => [...f.actions.keys()])))]
            .filter((a) => a !== 'Protect')
            .sort()
        : [],
      canLive: holds(session, 'tester'),
      baseUrl: ctx.baseUrl,
      devClientId: ctx.devClientId,
      ...(run ? { run } : {}),
      ...(problem ? { problem } : {}),
    }),
  );
}
