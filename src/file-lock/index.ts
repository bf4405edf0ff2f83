import { randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { link, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

const POLL_MS = 25;

/**
 * Where this process's pid means something: its host, its boot and its pid namespace (Linux's
 * /proc; elsewhere `-`). A container sharing a volume may share the host name (one Kubernetes pod)
 * but not the pid namespace, and a pid of an earlier boot names nobody now.
 */
const HERE = {
  host: procText(hostname),
  boot: procText(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()),
  pidNs: procText(() => readlinkSync('/proc/self/ns/pid')),
};

function procText(read: () => string): string {
  try {
    return read().replace(/\s/g, '') || '-';
  } catch {
    return '-';
  }
}

/** a lock file still without its holder's line after this long was left by a process killed while creating it */
const UNWRITTEN_AFTER_MS = 10_000;

export interface FileLockErrors {
  /** the lock stayed held by a live process for the whole wait */
  busy(): Error;
  /** the file system refused to create the lock file */
  failed(error: unknown): Error;
}

/**
 * Runs `body` holding `lockPath`, a file created exclusively (O_EXCL) that names its holder
 * (`<pid> <host> <boot id> <pid namespace>`): the one rule for serializing a read-modify-write of
 * a data dir's files between the processes sharing it (`veil serve --workers N`, a stream group on one host, the CLI
 * beside a running service). A lock left by a process that is no longer running (one killed inside
 * its critical section) is broken at once when this process can tell: same host and boot, same pid
 * namespace, no such pid — or same host, an earlier boot. One held by a live process, by another
 * host or from another pid namespace is waited for, `waitMs` at most (then `errors.busy()`).
 */
export async function withFileLock<T>(lockPath: string, errors: FileLockErrors, body: () => Promise<T>, waitMs = 5_000): Promise<T> {
  const deadline = Date.now() + waitMs;
  while (!(await tryCreate(lockPath, errors))) {
    const again = await breakIfOrphaned(lockPath);
    if (Date.now() >= deadline) throw errors.busy();
    if (!again) await sleep(POLL_MS);
  }
  try {
    return await body();
  } finally {
    await unlink(lockPath).catch(() => undefined);
  }
}

async function tryCreate(lockPath: string, errors: FileLockErrors): Promise<boolean> {
  try {
    const handle = await open(lockPath, 'wx', 0o600);
    await handle.writeFile(`${process.pid} ${HERE.host} ${HERE.boot} ${HERE.pidNs}\n`).finally(() => handle.close());
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw errors.failed(error);
  }
}

/**
 * Removes a lock whose holder, a process of this host, is gone. The lock is first renamed aside
 * (one breaker wins the rename) and removed only if the file renamed is still the orphan read: a
 * live holder that took the lock in between keeps it (its file is put back).
 */
async function breakIfOrphaned(lockPath: string): Promise<boolean> {
  let holder: string;
  try {
    holder = await readFile(lockPath, 'utf8');
  } catch (error) {
    // released meanwhile: try again at once; unreadable: wait like for a live holder
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
  if (!(await isOrphan(lockPath, holder))) return false;
  const aside = `${lockPath}.${randomBytes(6).toString('hex')}.stale`;
  try {
    await rename(lockPath, aside);
  } catch {
    return true; // another breaker or the holder moved it first
  }
  const moved = await readFile(aside, 'utf8').catch(() => undefined);
  // the file moved is the orphan read: the same line, or still an old file without one (a lock
  // created just now, not yet written, reads the same empty text but is not old)
  const same = moved === holder && (HOLDER_LINE.test(holder) || (await ageOf(aside)) > UNWRITTEN_AFTER_MS);
  if (moved !== undefined && !same) {
    // a live holder's lock, taken between the read and the rename: give it back (link: never over
    // a lock a third process may have created since; then two hold it, a window of microseconds)
    await link(aside, lockPath).catch(() => undefined);
    await unlink(aside).catch(() => undefined);
    return false;
  }
  await unlink(aside).catch(() => undefined);
  return true;
}

const HOLDER_LINE = /^(\d+) (\S+) (\S+) (\S+)\n$/;

/** ms since the file was last written (0 when it cannot be seen) */
function ageOf(path: string): Promise<number> {
  return stat(path).then(
    (s) => Date.now() - s.mtimeMs,
    () => 0,
  );
}

async function isOrphan(lockPath: string, holder: string): Promise<boolean> {
  const m = HOLDER_LINE.exec(holder);
  // no holder line yet: being written now, or left by a process killed between create and write
  if (!m) return (await ageOf(lockPath)) > UNWRITTEN_AFTER_MS;
  const [, pid, host, boot, pidNs] = m;
  // another host's process: its liveness cannot be seen here
  if (host !== HERE.host) return false;
  if (boot !== HERE.boot && boot !== '-' && HERE.boot !== '-') return true;
  if (pidNs !== HERE.pidNs || Number(pid) === process.pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
