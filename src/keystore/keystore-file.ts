import { randomBytes } from 'node:crypto';
import { open, readFile, rename, unlink } from 'node:fs/promises';
import { errorCode } from './master-key.ts';

/**
 * The keystore file's I/O, apart from what it holds: read (undefined when absent), durable replace
 * (temporary file, fsync, rename, directory fsync); changes are serialized between processes
 * by src/file-lock. Errors are the file system's; LocalKeystore names them.
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
