import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/**
 * The Python packages of the interop tests: confluent-kafka's own serializers (Protobuf, JSON
 * Schema) with their registry client, and grpcio-tools for protoc. Pinned, so a new release cannot
 * change what "interop" means between two runs.
 */
const PACKAGES = ['confluent-kafka[schemaregistry,protobuf,json]==2.16.1', 'grpcio-tools==1.85.1'];

let ready: Promise<string> | undefined;

/**
 * A python3 with confluent-kafka in a venv under ~/.cache/veil (built once from PyPI, needs
 * python3-venv, which .ci/run installs). Returns the venv's python.
 */
export function confluentPython(): Promise<string> {
  ready ??= build();
  return ready;
}

async function build(): Promise<string> {
  const venv = join(homedir(), '.cache/veil', `confluent-py-${PACKAGES.join(' ').replace(/[^A-Za-z0-9.=-]+/g, '_').slice(0, 80)}`);
  const python = join(venv, 'bin/python');
  const stamp = join(venv, '.veil-ready');
  if (existsSync(stamp)) return python;
  await rm(venv, { recursive: true, force: true });
  await mkdir(venv, { recursive: true });
  await exec('python3', ['-m', 'venv', venv], { timeout: 120_000 });
  await exec(join(venv, 'bin/pip'), ['install', '--quiet', '--disable-pip-version-check', ...PACKAGES], { timeout: 600_000 });
  await exec('touch', [stamp]);
  return python;
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
