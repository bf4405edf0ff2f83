import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { revealKeyBytes, SecretKey } from '../../src/engine/index.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import type { ErasedSubject, SubjectKey } from '../../src/subjects/index.ts';

/** A fresh temp directory; `cleanup` removes every one made. */
const dirs: string[] = [];
export async function tempDir(label = 'veil-subjects-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), label));
  dirs.push(dir);
  return dir;
}
export async function cleanup(): Promise<void> {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

/** A keystore under a random master key in `dataDir` (the key set the subject keys are wrapped by). */
export async function keystoreIn(dataDir: string, masterKey = SecretKey.fromBytes(randomBytes(32))): Promise<LocalKeystore> {
  return LocalKeystore.open({ dataDir, masterKey });
}

/** The key's bytes as hex (tests only: comparing two handles). */
export function keyHex(result: SubjectKey | ErasedSubject | undefined): string {
  if (!result || result.erased) throw new Error(`expected a key, got ${JSON.stringify(result)}`);
  return Buffer.from(revealKeyBytes(result.key)).toString('hex');
}
