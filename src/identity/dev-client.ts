import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { hashClientSecret } from './client-secret.ts';
import type { Client } from './token-service.ts';

export const DEV_CLIENT_ID = 'veil-dev';
export const DEV_CLIENT_FILE = 'dev-client.secret';

/**
 * The development client: id `veil-dev`, a random secret kept in `<dataDir>/dev-client.secret`
 * (mode 0600, created on first start) and every role the configuration uses. Production turns
 * it off (VEIL_ENV=production) and configures clients with hashed secrets instead.
 */
export async function devClient(
  dataDir: string,
  roles: readonly string[],
): Promise<{ id: string; client: Client; secretFile: string; created: boolean; secret: string }> {
  const secretFile = join(dataDir, DEV_CLIENT_FILE);
  let secret: string;
  let created = false;
  try {
    secret = (await readFile(secretFile, 'utf8')).trim();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    secret = randomBytes(24).toString('base64url');
    // written aside and linked into place: a process starting beside this one reads the file whole
    // or not at all (an exclusive create would let it read the file before its secret is written)
    const temp = `${secretFile}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      const handle = await open(temp, 'wx', 0o600);
      await handle.writeFile(`${secret}\n`).finally(() => handle.close());
      await link(temp, secretFile);
      created = true;
    } catch (raced) {
      if ((raced as NodeJS.ErrnoException).code !== 'EEXIST') throw raced;
      secret = (await readFile(secretFile, 'utf8')).trim();
    } finally {
      await unlink(temp).catch(() => undefined);
    }
  }
  return { id: DEV_CLIENT_ID, client: { secretHash: await hashClientSecret(secret), roles }, secretFile, created, secret };
}
