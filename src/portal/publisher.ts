import { Engine, VeilError, type ConfigIssue } from '../engine/index.ts';
import { compileVeilConfigText, type VeilConfig } from '../app/config-file.ts';
import type { TestCase } from '../app/config-versions.ts';
import { provisionKeys, requireKeys } from '../app/config-keys.ts';
import type { PortalDeps } from './portal-deps.ts';
import { SandboxKeys } from './sandbox-keys.ts';
import { runTestCase } from './tester.ts';

/** A configuration the portal shows: a published version or a draft, its text, what validation says. */
export interface Source {
  /** `v3` or `draft:<id>` */
  ref: string;
  label: string;
  text: string;
  config?: VeilConfig;
  issues: ConfigIssue[];
  tests: TestCase[];
  draftId?: string;
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
  const compiled = compileVeilConfigText(text);
  return { ref, label, text, issues: compiled.issues, tests, ...(compiled.config ? { config: compiled.config } : {}), ...(draftId ? { draftId } : {}) };
}

export interface TestOutcome {
  test: TestCase;
  pass: boolean;
  got: string;
}

/** Runs a draft's saved test cases on fresh sandbox keys (never live ones). */
export async function runSavedTests(config: VeilConfig, tests: readonly TestCase[], now: () => Date): Promise<TestOutcome[]> {
  const sandbox = new SandboxKeys(now());
  sandbox.cover(config.engine);
  const engine = new Engine({ config: config.engine, keys: sandbox });
  const outcomes: TestOutcome[] = [];
  for (const test of tests) {
    const caller = { roles: [test.role], clientId: 'portal-test', subject: 'portal-test', issuer: 'veil-portal' };
    outcomes.push({ test, ...(await runTestCase({ config: config.engine, engine, keys: sandbox, caller, now }, test)) });
  }
  return outcomes;
}

/**
 * Publishes a configuration text: valid (no errors), every saved test case passing, the keystore
 * able to serve it (development: missing keys are created) → a new immutable version, made active,
 * and the running service's engine swapped — calls already running finish on the old one.
 * Refusals are PUBLISH_REFUSED with every reason.
 */
export async function publish(deps: PortalDeps, text: string, meta: { by: string; note: string; tests: readonly TestCase[] }): Promise<number> {
  const compiled = compileVeilConfigText(text);
  const errors = compiled.issues.filter((i) => i.severity === 'error');
  if (!compiled.config || errors.length) throw new VeilError('PUBLISH_REFUSED', `the configuration is invalid: ${errors.map((i) => `${i.pointer || '/'}: ${i.message}`).join('; ')}`);
  const failing = (await runSavedTests(compiled.config, meta.tests, deps.now)).filter((o) => !o.pass);
  if (failing.length) throw new VeilError('PUBLISH_REFUSED', `saved test cases fail: ${failing.map((f) => `${f.test.name} expected ${f.test.expect}, got ${f.got}`).join('; ')}`);
  try {
    if (deps.development) await provisionKeys(compiled.config.engine, deps.keystore);
    else requireKeys(compiled.config.engine, deps.keystore);
  } catch (e) {
    if (e instanceof VeilError) throw new VeilError('PUBLISH_REFUSED', `the keystore cannot serve it: ${e.message}`, [], { cause: e });
    throw e;
  }
  const engine = new Engine({ config: compiled.config.engine, keys: deps.keystore });
  const number = await deps.versions.publish(text, { by: meta.by, source: 'portal', note: meta.note, now: deps.now() });
  deps.holder.swap({ engine, config: compiled.config, version: number });
  return number;
}
