import { Engine } from '../engine/index.ts';
import type { TestCase } from '../control/index.ts';
import type { ConfigCompiler } from './config-port.ts';
import { SandboxKeys } from './sandbox-keys.ts';
import { runTestCase, runTester, type TesterRun } from './tester.ts';

export interface TestOutcome {
  test: TestCase;
  pass: boolean;
  got: string;
}

/** Work the sandbox thread does: everything a draft (any text an editor wrote) makes veil compute. */
export type SandboxJob =
  | { kind: 'tests'; text: string; tests: readonly TestCase[] }
  | {
      kind: 'tester';
      text: string;
      seed: Uint8Array;
      caller: { roles: string[]; clientId: string; subject: string; issuer: string };
      input: { className: string; role: string; action: string; values: [string, string][] };
    };

export type SandboxResult<J extends SandboxJob> = J extends { kind: 'tests' } ? TestOutcome[] : TesterRun | undefined;

/** Runs a draft's saved test cases on fresh sandbox keys (never live ones). */
export async function runSavedTests(text: string, tests: readonly TestCase[], now: () => Date, compile: ConfigCompiler): Promise<TestOutcome[]> {
  const config = compile(text).config;
  if (!config) return [];
  const sandbox = new SandboxKeys();
  sandbox.cover(config.engine);
  const engine = new Engine({ config: config.engine, keys: sandbox });
  const outcomes: TestOutcome[] = [];
  for (const test of tests) {
    const caller = { roles: [test.role], clientId: 'portal-test', subject: 'portal-test', issuer: 'veil-portal' };
    outcomes.push({ test, ...(await runTestCase({ config: config.engine, engine, keys: sandbox, caller, now }, test)) });
  }
  return outcomes;
}

/** The tester on the session's sandbox keys (derived from its seed), for any version or draft and any role. */
export async function runSandboxTester(job: Extract<SandboxJob, { kind: 'tester' }>, now: () => Date, compile: ConfigCompiler): Promise<TesterRun | undefined> {
  const config = compile(job.text).config;
  if (!config) return undefined;
  const sandbox = new SandboxKeys(job.seed);
  sandbox.cover(config.engine);
  const engine = new Engine({ config: config.engine, keys: sandbox });
  return runTester({ config: config.engine, engine, keys: sandbox, caller: job.caller, now }, job.input);
}

/** A job, its text compiled by `compile` (the whole configuration's compiler the wiring gave the sandbox thread). */
export async function runJob(job: SandboxJob, now: () => Date, compile: ConfigCompiler): Promise<unknown> {
  return job.kind === 'tests' ? runSavedTests(job.text, job.tests, now, compile) : runSandboxTester(job, now, compile);
}
