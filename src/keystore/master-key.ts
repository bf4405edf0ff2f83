import { randomBytes } from 'node:crypto';
import { link, mkdir, open, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { SecretKey, VeilError } from '../engine/index.ts';
import { KeystoreError } from './errors.ts';

/**
 * The master key protects the keystore file. Production supplies it in VEIL_MASTER_KEY (from a
 * secret manager); without it, a development key file `<dataDir>/master.key` is generated on
 * first use and must stay private to its owner (mode 0600). Callers learn where the key came
 * from, never the key.
 */
export const MASTER_KEY_ENV = 'VEIL_MASTER_KEY';
export const MASTER_KEY_FILE = 'master.key';
export const MASTER_KEY_BYTES = 32;

export type MasterKeySource = { kind: 'env'; variable: typeof MASTER_KEY_ENV } | { kind: 'file'; path: string; created: boolean };

export interface MasterKey {
  key: SecretKey;
  source: MasterKeySource;
}

export interface ResolveMasterKeyOptions {
  dataDir: string;
  env: Readonly<Record<string, string | undefined>>;
}

export async function resolveMasterKey(options: ResolveMasterKeyOptions): Promise<MasterKey> {
  const fromEnv = options.env[MASTER_KEY_ENV];
  if (fromEnv !== undefined) {
    return { key: wrap(parseMasterKey(fromEnv, MASTER_KEY_ENV)), source: { kind: 'env', variable: MASTER_KEY_ENV } };
  }
  const path = join(options.dataDir, MASTER_KEY_FILE);
  const existing = await readKeyFile(path);
  if (existing) return { key: wrap(existing), source: { kind: 'file', path, created: false } };
  const created = await createKeyFile(options.dataDir, path);
  return { key: wrap(created.bytes), source: { kind: 'file', path, created: created.created } };
}

/** One line for stderr: where the master key came from. */
export function describeMasterKeySource(source: MasterKeySource): string {
  if (source.kind === 'env') return `master key from ${source.variable}`;
  const verb = source.created ? 'created a development master key at' : 'using the development master key at';
  return `${verb} ${source.path} (set ${MASTER_KEY_ENV} in production)`;
}

/**
 * Decodes a master key: 64 hex digits, or the base64 (standard or URL-safe, padding optional) of
 * 32 bytes. `origin` names the source in error messages; the text itself is never echoed.
 */
export function parseMasterKey(text: string, origin: string): Uint8Array {
  const value = text.trim();
  if (value.length === 0) {
    throw new KeystoreError('KEYSTORE_INVALID', `${origin} is empty; it must hold 64 hex digits or the base64 of 32 bytes`);
  }
  if (/^[0-9a-fA-F]{64}$/.test(value)) return decode(value, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(value) || /^[A-Za-z0-9_-]{43}=?$/.test(value)) {
    const bytes = decode(value, 'base64');
    // the last character carries 2 spare bits; accept only the canonical encoding
    const canonical = Buffer.from(bytes).toString('base64').replace(/=$/, '');
    const given = value.replace(/=$/, '').replace(/-/g, '+').replace(/_/g, '/');
    if (bytes.length === MASTER_KEY_BYTES && canonical === given) return bytes;
  }
  throw new KeystoreError(
    'KEYSTORE_INVALID',
    `${origin} must hold 64 hex digits or the base64 of ${MASTER_KEY_BYTES} bytes (got ${value.length} characters that are neither)`,
  );
}

function decode(value: string, encoding: 'hex' | 'base64'): Uint8Array {
  const buffer = Buffer.from(value, encoding);
  const bytes = Uint8Array.from(buffer);
  buffer.fill(0);
  return bytes;
}

function wrap(bytes: Uint8Array): SecretKey {
  const key = SecretKey.fromBytes(bytes);
  bytes.fill(0);
  return key;
}

/** Reads and checks the development key file; undefined when it does not exist. */
async function readKeyFile(path: string): Promise<Uint8Array | undefined> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw new KeystoreError('KEYSTORE_INVALID', `cannot read the development master key ${path} (${errorCode(error) ?? 'error'})`, { cause: error });
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new KeystoreError('KEYSTORE_INVALID', `the development master key ${path} is not a regular file`);
    if (process.platform !== 'win32' && (stat.mode & 0o077) !== 0) {
      const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
      throw new KeystoreError(
        'KEYSTORE_INVALID',
        `the development master key ${path} has mode ${mode}: group or others may access it; run 'chmod 600 ${path}' if it was not exposed, or replace it`,
      );
    }
    const text = await handle.readFile('utf8');
    return parseMasterKey(text, `the development master key ${path}`);
  } catch (error) {
    if (error instanceof VeilError) throw error;
    throw new KeystoreError('KEYSTORE_INVALID', `cannot read the development master key ${path} (${errorCode(error) ?? 'error'})`, { cause: error });
  } finally {
    await handle.close();
  }
}

/**
 * Writes a new key to a private temp file and hard-links it into place: the key file appears
 * complete or not at all, and if another process won the race, its key is used instead.
 */
async function createKeyFile(dataDir: string, path: string): Promise<{ bytes: Uint8Array; created: boolean }> {
  const temp = join(dataDir, `.${MASTER_KEY_FILE}.${randomBytes(6).toString('hex')}.tmp`);
  const bytes = randomBytes(MASTER_KEY_BYTES);
  try {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(`${bytes.toString('hex')}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await link(temp, path);
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
      bytes.fill(0);
      const theirs = await readKeyFile(path);
      if (!theirs) throw error;
      return { bytes: theirs, created: false };
    }
    return { bytes: Uint8Array.from(bytes), created: true };
  } catch (error) {
    if (error instanceof VeilError) throw error;
    throw new KeystoreError('KEYSTORE_INVALID', `cannot create the development master key ${path} (${errorCode(error) ?? 'error'})`, { cause: error });
  } finally {
    bytes.fill(0);
    await unlink(temp).catch(() => undefined);
  }
}

export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
