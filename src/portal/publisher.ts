import { createHash } from 'node:crypto';
import { Engine, VeilError, type ConfigIssue } from '../engine/index.ts';
import type { TestCase } from '../control/index.ts';
import type { ConfigView } from './config-port.ts';
import type { PortalDeps } from './portal-deps.ts';
import { draftLimitDetails } from './draft-limits.ts';
import type { TestOutcome } from './sandbox-jobs.ts';
import type { SandboxRunner } from './sandbox-runner.ts';
import { redactSecretHashes } from './secret-redaction.ts';
import { PortalError } from './errors.ts';

export type { TestOutcome } from './sandbox-jobs.ts';

/** The hash a publisher's form carries: of the exact draft text the page showed. */
export const textHash = (text: string) => createHash('sha256').update(text).digest('hex');

/** A configuration the portal shows: a published version or a draft, its text, what validation says. */
export interface Source {
  /** `v3` or `draft:<id>` */
  ref: string;
  label: string;
  /** the stored text: compiled, hashed, published; never shown (it holds client secret hashes) */
  text: string;
  /** what pages and exports show: the text with every client secret hash replaced (secret-redaction.ts) */
  shown: string;
  config?: ConfigView;
  issues: ConfigIssue[];
  tests: TestCase[];
  draftId?: string;
}

/** A configuration a page can pick: a published version or a draft, named as loadSource takes it. */
export interface ConfigChoice {
  ref: string;
  label: string;
}

/** Every published version, oldest first, then every draft: what the Role × field and Diff pages offer. */
export async function configChoices(deps: PortalDeps): Promise<ConfigChoice[]> {
  return [
    ...deps.versions.versions().map((v) => ({ ref: `v${v.number}`, label: `version ${v.number}` })),
    ...(await deps.versions.drafts()).map((d) => ({ ref: `draft:${d.id}`, label: `draft ${d.id.slice(0, 8)}` })),
  ];
}

export async function loadSource(deps: PortalDeps, ref: string): Promise<Source> {
  let text: string;
  let label: string;
  let tests: TestCase[] = [];
  let draftId: string | undefined;
  if (ref.startsWith('draft:')) {
    draftId = ref.slice(6);
    const meta = await deps.versions.draft(draftId);
    text = await deps.versions.draftText(draftId);
    tests = meta.tests;
    label = `draft ${draftId.slice(0, 8)} (from version ${meta.basedOn})`;
  } else {
    const n = Number(ref.replace(/^v/, ''));
    if (!Number.isInteger(n)) throw new VeilError('NOT_FOUND', 'no such configuration version');
    text = await deps.versions.read(n);
    label = `version ${n}${n === deps.versions.active() ? ' (active)' : ''}`;
  }
  // a draft over the portal's limits (stored before they applied) is shown, never compiled or run
  const over = draftId ? draftLimitDetails(text) : [];
  if (over.length)
    return {
      ref,
      label,
      text,
      shown: redactSecretHashes(text),
      issues: over.map((d) => ({ severity: 'error', pointer: d.pointer, message: d.message })),
      tests,
      draftId: draftId!,
    };
  const compiled = deps.configPort.compile(text);
  return {
    ref,
    label,
    text,
    shown: redactSecretHashes(text),
    issues: compiled.issues,
    tests,
    ...(compiled.config ? { config: compiled.config } : {}),
    ...(draftId ? { draftId } : {}),
  };
}

/** A draft's saved test cases on fresh sandbox keys, in the sandbox thread. */
export async function runSavedTests(sandbox: SandboxRunner, text: string, tests: readonly TestCase[]): Promise<TestOutcome[]> {
  return tests.length ? sandbox.run({ kind: 'tests', text, tests }) : [];
}

/**
 * Publishes a configuration text: valid (no errors), every saved test case passing, the keystore
 * able to serve it (configPort.prepareKeys; development: missing keys are created) → a new
 * immutable version, made active, and the running service's engine swapped — calls already
 * running finish on the old one. Refusals are PUBLISH_REFUSED with every reason.
 */
export async function publish(
  deps: PortalDeps & { sandbox: SandboxRunner },
  text: string,
  meta: { by: string; note: string; tests: readonly TestCase[] },
): Promise<number> {
  const compiled = deps.configPort.compile(text);
  const errors = compiled.issues.filter((i) => i.severity === 'error');
  if (!compiled.config || errors.length)
    throw new PortalError('PUBLISH_REFUSED', `the configuration is invalid: ${errors.map((i) => `${i.pointer || '/'}: ${i.message}`).join('; ')}`);
  let outcomes: TestOutcome[];
  try {
    outcomes = await runSavedTests(deps.sandbox, text, meta.tests);
  } catch (e) {
    throw new PortalError('PUBLISH_REFUSED', `the saved test cases did not run: ${(e as Error).message}`, { cause: e });
  }
  const failing = outcomes.filter((o) => !o.pass);
  if (failing.length)
    throw new PortalError(
      'PUBLISH_REFUSED',
      `saved test cases fail: ${failing.map((f) => `${f.test.name} expected ${f.test.expect}, got ${f.got}`).join('; ')}`,
    );
  try {
    await deps.configPort.prepareKeys(compiled.config.engine);
  } catch (e) {
    if (e instanceof VeilError) throw new PortalError('PUBLISH_REFUSED', `the keystore cannot serve it: ${e.message}`, { cause: e });
    throw e;
  }
  const engine = new Engine({ config: compiled.config.engine, keys: deps.keystore });
  const number = await deps.versions.publish(text, { by: meta.by, source: 'portal', note: meta.note, now: deps.now() });
  deps.holder.swap({ engine, config: compiled.config, version: number });
  return number;
}
