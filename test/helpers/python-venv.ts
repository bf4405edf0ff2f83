import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const built = new Map<string, Promise<string>>();

/**
 * A venv under ~/.cache/veil with pinned PyPI packages, built once (needs python3 with venv,
 * which .ci/run installs): its directory. A venv whose package list changed is rebuilt. It is
 * built aside and renamed into place, so test files building it at once do not collide: run its
 * tools as `bin/python -m …` (a moved venv's script shebangs point at the build directory).
 */
export function pythonVenv(name: string, packages: readonly string[]): Promise<string> {
  let ready = built.get(name);
  if (!ready) built.set(name, (ready = build(name, packages)));
  return ready;
}

async function build(name: string, packages: readonly string[]): Promise<string> {
  const venv = join(homedir(), '.cache/veil', `${name}-venv`);
  const stamp = join(venv, '.veil-ready');
  const want = packages.join('\n');
  if (existsSync(stamp) && (await readFile(stamp, 'utf8')) === want) return venv;
  const aside = `${venv}.build-${process.pid}-${Date.now()}`;
  await mkdir(aside, { recursive: true });
  await exec('python3', ['-m', 'venv', aside], { timeout: 120_000 });
  await exec(join(aside, 'bin/python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...packages], { timeout: 600_000 });
  await writeFile(join(aside, '.veil-ready'), want);
  if (existsSync(stamp) && (await readFile(stamp, 'utf8')) === want) {
    await rm(aside, { recursive: true, force: true }); // another test file finished first
    return venv;
  }
  await rm(venv, { recursive: true, force: true });
  await rename(aside, venv);
  return venv;
}
