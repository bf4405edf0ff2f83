import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pythonVenv } from './python-venv.ts';

const exec = promisify(execFile);

/**
 * A python3 with confluent-kafka in a venv under ~/.cache/veil (built once from PyPI, needs
 * python3-venv, which .ci/run installs). Returns the venv's python.
 */
export async function confluentPython(): Promise<string> {
  return join(await pythonVenv('confluent-py'), 'bin/python');
}

/** Runs a script of test/interop with the venv's python; its stdout, or the error with its stderr. */
export async function runPython(script: string, args: string[], options: { cwd?: string; input?: string; timeout?: number } = {}): Promise<string> {
  const python = await confluentPython();
  const file = join(import.meta.dirname, '../interop', script);
  try {
    const { stdout } = await exec(python, [file, ...args], { cwd: options.cwd, timeout: options.timeout ?? 120_000, maxBuffer: 64 << 20 });
    return stdout;
  } catch (e) {
    const err = e as Error & { stderr?: string };
    throw new Error(`${script} failed: ${err.message}\n${err.stderr ?? ''}`);
  }
}
