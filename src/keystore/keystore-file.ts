import { randomBytes } from 'node:crypto';
import { open, readFile, rename, unlink } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorCode } from './master-key.ts';

const LOCK_WAIT_MS = 5_000;
const LOCK_POLL_MS = 25;

/**
 * The keystore file's I/O, apart from what it holds: read (undefined when absent), durable replace
 * (temporary file, fsync, rename, directory fsync) and the lock file that serializes changes
 * between processes sharing a data dir. Errors are the file system's; LocalKeystore names them.
 */
export async function readKeystoreFile(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/** Replaces `path` (in `dir`) with `bytes`, mode 0600: readers see the old file or the new one, whole. */
export async function replaceKeystoreFile(dir: string, path: string, bytes: Buffer): Promise<void> {
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await syncDirectory(dir);
}

/**
 * Runs `body` holding `<path>.lock` (created exclusively). Taking the lock fails with
 * `errors.busy()` after 5 s of waiting, `errors.failed(e)` when the file system refuses.
 */
export async function withKeystoreLock<T>(path: string, errors: { busy(): Error; failed(error: unknown): Error }, body: () => Promise<T>): Promise<T> {
  const lockPath = `${path}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const handle = await open(lockPath, 'wx', 0o600);
      await handle.writeFile(`${process.pid}\n`).finally(() => handle.close());
      break;
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw errors.failed(error);
      if (Date.now() >= deadline) throw errors.busy();
      await sleep(LOCK_POLL_MS);
    }
  }
  try {
    return await body();
  } finally {
    await unlink(lockPath).catch(() => undefined);
  }
}

/** Makes the rename durable; not every platform can fsync a directory. */
async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // best effort
  }
}
