import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { COMPOSE_SPEC, goModuleFile, helmPath, KEDA_SCALEDOBJECT_CRD, SERVICEMONITOR_CRD } from '../deploy/kube-tools.ts';
import { node20 } from '../helpers/node20.ts';
import { ROOT } from '../helpers/processes.ts';
import { pythonVenv, VENVS } from '../helpers/python-venv.ts';

/**
 * vitest global setup: fills the tools' cache (~/.cache/veil and Go's module cache) in the
 * background while the first test files run, instead of inside the files that need a tool. On a
 * fresh machine (CI) these are minutes of downloads and builds — helm from the Go module proxy,
 * five PyPI venvs, Node.js 20, the CRDs' Go modules — that a test file used to wait for with its
 * worker idle. It does not wait for them: a file that needs a tool before it is ready waits on that
 * tool's lock (scripts/helm.sh, scripts/python-venv.sh, node20's), never builds it twice. A
 * failure here is left to the test that needs the tool, which tries again and reports it. A run
 * of chosen files (`vitest run <files>`) warms nothing: those files fetch what they use.
 */
export default function setup(project: TestProject): () => Promise<void> {
  // the run's file filters: vitest keeps them on an undeclared field (5.x); should it go, every run warms up, which only costs time
  const filters = (project.vitest as unknown as { filenamePattern?: string[] }).filenamePattern;
  if (filters?.length || process.env.VEIL_NO_TOOL_WARM_UP) return async () => {};
  const quietly = (work: Promise<unknown>) =>
    work.then(
      () => undefined,
      () => undefined,
    );
  // two lanes: helm's build is CPU (niced), the others mostly downloads
  const helm = quietly(helmPath());
  const others = (async () => {
    for (const name of Object.keys(VENVS) as (keyof typeof VENVS)[]) await quietly(pythonVenv(name));
    await quietly(promisify(execFile)('bash', [`${ROOT}scripts/schemathesis.sh`, '--install'], { timeout: 900_000 }));
    await quietly(node20());
    for (const file of [KEDA_SCALEDOBJECT_CRD, SERVICEMONITOR_CRD, COMPOSE_SPEC]) await quietly(goModuleFile(file));
  })();
  // the run's end waits for them, so no build is cut off half-written
  return async () => {
    await Promise.all([helm, others]);
  };
}
