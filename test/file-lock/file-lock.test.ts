import { execFile, spawn } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withFileLock } from '../../src/file-lock/index.ts';

const node = new URL('../../scripts/node22', import.meta.url).pathname;
const lockModule = new URL('../../src/file-lock/index.ts', import.meta.url).pathname;
// this process's boot and pid namespace, as a lock names them
const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
const pidNs = readlinkSync('/proc/self/ns/pid');
const holder = (pid: number, host = hostname(), bootId = boot, ns = pidNs) => `${pid} ${host} ${bootId} ${ns}\n`;
const errors = { busy: () => new Error('busy'), failed: (e: unknown) => new Error('failed', { cause: e }) };

let dir: string;
let lock: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'veil-lock-'));
  lock = join(dir, 'x.lock');
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

/** the pid of a process of this host that has exited */
async function deadPid(): Promise<number> {
  const child = spawn('true');
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

describe('withFileLock', () => {
  it('runs one body at a time within a process, and releases the lock after a body that throws', async () => {
    let inside = 0;
    let most = 0;
    const body = async () => {
      most = Math.max(most, ++inside);
      await new Promise((r) => setTimeout(r, 5));
      inside--;
    };
    await Promise.all(Array.from({ length: 8 }, () => withFileLock(lock, errors, body)));
    expect(most).toBe(1);
    await expect(
      withFileLock(lock, errors, async () => {
        throw new Error('inside');
      }),
    ).rejects.toThrow('inside');
    expect(await withFileLock(lock, errors, async () => 'again')).toBe('again');
  });

  it('serializes processes: four processes add 25 each to a counter file, none lost', async () => {
    const counter = join(dir, 'counter');
    await writeFile(counter, '0');
    const script = `import { readFile, writeFile } from 'node:fs/promises';
      import { withFileLock } from ${JSON.stringify(lockModule)};
      const errors = { busy: () => new Error('busy'), failed: (e) => e };
      for (let i = 0; i < 25; i++) await withFileLock(${JSON.stringify(lock)}, errors, async () => {
        const n = Number(await readFile(${JSON.stringify(counter)}, 'utf8'));
        await new Promise((r) => setImmediate(r));
        await writeFile(${JSON.stringify(counter)}, String(n + 1));
      }, 20000);`;
    const run = promisify(execFile);
    await Promise.all([1, 2, 3, 4].map(() => run(node, ['--input-type=module', '-e', script])));
    expect(await readFile(counter, 'utf8')).toBe('100');
  }, 60_000);

  it('breaks at once a lock left by a process of this host that is gone (killed inside its critical section)', async () => {
    await writeFile(lock, holder(await deadPid()));
    const started = Date.now();
    expect(await withFileLock(lock, errors, async () => readFile(lock, 'utf8'), 2_000)).toBe(holder(process.pid));
    expect(Date.now() - started).toBeLessThan(1_000);
    // a pid of an earlier boot names nobody now, whatever runs under that number today
    await writeFile(lock, holder(process.ppid, hostname(), 'an-earlier-boot'));
    expect(await withFileLock(lock, errors, async () => 'ran', 2_000)).toBe('ran');
  });

  it("waits for a live holder, another host's and another pid namespace's (a container of the same pod), then answers busy", async () => {
    await writeFile(lock, holder(process.ppid));
    await expect(withFileLock(lock, errors, async () => 'ran', 200)).rejects.toThrow('busy');
    const dead = await deadPid();
    for (const other of [holder(dead, 'some-other-host'), holder(dead, hostname(), boot, 'pid:[1]')]) {
      await writeFile(lock, other);
      await expect(withFileLock(lock, errors, async () => 'ran', 200)).rejects.toThrow('busy');
      expect(await readFile(lock, 'utf8')).toBe(other);
    }
  });

  it('a lock file without its holder line is left alone while fresh, broken once old (a process killed between create and write)', async () => {
    await writeFile(lock, '');
    await expect(withFileLock(lock, errors, async () => 'ran', 200)).rejects.toThrow('busy');
    const old = new Date(Date.now() - 60_000);
    await utimes(lock, old, old);
    expect(await withFileLock(lock, errors, async () => 'ran', 200)).toBe('ran');
  });

  it("names the file system's refusal through errors.failed", async () => {
    await expect(withFileLock(join(dir, 'missing-dir', 'x.lock'), errors, async () => 'ran')).rejects.toThrow('failed');
  });
});
