import { randomBytes } from 'node:crypto';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { revealKeyBytes } from '../../src/engine/index.ts';
import { describeMasterKeySource, parseMasterKey, resolveMasterKey } from '../../src/keystore/master-key.ts';
import { tempDir, veilError } from './helpers.ts';

const hexOf = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

describe('development master key file', () => {
  it('is generated on first use with mode 0600 in a 0700 directory, then reused', async () => {
    const dataDir = join(await tempDir(), 'nested', '.veil');
    const first = await resolveMasterKey({ dataDir, env: {} });
    const path = join(dataDir, 'master.key');
    expect(first.source).toEqual({ kind: 'file', path, created: true });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
    expect(revealKeyBytes(first.key)).toHaveLength(32);
    expect((await readFile(path, 'utf8')).trim()).toBe(hexOf(revealKeyBytes(first.key)));

    const second = await resolveMasterKey({ dataDir, env: {} });
    expect(second.source).toEqual({ kind: 'file', path, created: false });
    expect(hexOf(revealKeyBytes(second.key))).toBe(hexOf(revealKeyBytes(first.key)));
  });

  it('describes its source without the key', async () => {
    const dataDir = await tempDir();
    const { key, source } = await resolveMasterKey({ dataDir, env: {} });
    const text = describeMasterKeySource(source);
    expect(text).toContain(`development master key at ${join(dataDir, 'master.key')}`);
    expect(text).not.toContain(hexOf(revealKeyBytes(key)));
    expect(describeMasterKeySource({ kind: 'env', variable: 'VEIL_MASTER_KEY' })).toBe('master key from VEIL_MASTER_KEY');
  });

  it('concurrent first uses agree on one key', async () => {
    const dataDir = await tempDir();
    const results = await Promise.all([1, 2, 3, 4].map(() => resolveMasterKey({ dataDir, env: {} })));
    const keys = new Set(results.map((r) => hexOf(revealKeyBytes(r.key))));
    expect(keys.size).toBe(1);
    expect(results.filter((r) => r.source.kind === 'file' && r.source.created)).toHaveLength(1);
  });

  it.each([0o644, 0o640, 0o604, 0o660, 0o606])('is refused with mode %o', async (mode) => {
    const dataDir = await tempDir();
    const { key } = await resolveMasterKey({ dataDir, env: {} });
    const path = join(dataDir, 'master.key');
    await chmod(path, mode);
    const error = await veilError(() => resolveMasterKey({ dataDir, env: {} }), 'KEYSTORE_INVALID');
    expect(error.message).toContain(path);
    expect(error.message).toContain(`mode 0${mode.toString(8)}`);
    expect(error.message).toContain('chmod 600');
    expect(error.message).not.toContain(hexOf(revealKeyBytes(key)));
  });

  it('is accepted with mode 0400', async () => {
    const dataDir = await tempDir();
    const { key } = await resolveMasterKey({ dataDir, env: {} });
    await chmod(join(dataDir, 'master.key'), 0o400);
    const again = await resolveMasterKey({ dataDir, env: {} });
    expect(hexOf(revealKeyBytes(again.key))).toBe(hexOf(revealKeyBytes(key)));
  });

  it('is refused when malformed, without echoing its content', async () => {
    const dataDir = await tempDir();
    const path = join(dataDir, 'master.key');
    const content = `${randomBytes(31).toString('hex')}\n`;
    await writeFile(path, content, { mode: 0o600 });
    const error = await veilError(() => resolveMasterKey({ dataDir, env: {} }), 'KEYSTORE_INVALID');
    expect(error.message).toContain(path);
    expect(error.message).not.toContain(content.trim());
  });
});

describe('VEIL_MASTER_KEY', () => {
  const bytes = randomBytes(32);
  const accepted: [string, string][] = [
    ['lower-case hex', bytes.toString('hex')],
    ['upper-case hex', bytes.toString('hex').toUpperCase()],
    ['base64', bytes.toString('base64')],
    ['base64 without padding', bytes.toString('base64').replace(/=$/, '')],
    ['base64url', bytes.toString('base64url')],
    ['hex with surrounding whitespace', ` ${bytes.toString('hex')}\n`],
  ];

  it.each(accepted)('accepts %s', async (_name, value) => {
    const dataDir = await tempDir();
    const { key, source } = await resolveMasterKey({ dataDir, env: { VEIL_MASTER_KEY: value } });
    expect(source).toEqual({ kind: 'env', variable: 'VEIL_MASTER_KEY' });
    expect(hexOf(revealKeyBytes(key))).toBe(bytes.toString('hex'));
  });

  it('wins over an existing key file and creates none', async () => {
    const dataDir = await tempDir();
    await resolveMasterKey({ dataDir, env: {} });
    const { key } = await resolveMasterKey({ dataDir, env: { VEIL_MASTER_KEY: bytes.toString('hex') } });
    expect(hexOf(revealKeyBytes(key))).toBe(bytes.toString('hex'));

    const empty = await tempDir();
    await resolveMasterKey({ dataDir: empty, env: { VEIL_MASTER_KEY: bytes.toString('base64') } });
    await expect(stat(join(empty, 'master.key'))).rejects.toThrow();
  });

  const rejected: [string, string][] = [
    ['empty', ''],
    ['blank', '   '],
    ['63 hex digits', bytes.toString('hex').slice(0, 63)],
    ['65 hex digits', `${bytes.toString('hex')}a`],
    ['hex of 16 bytes', bytes.subarray(0, 16).toString('hex')],
    ['base64 of 31 bytes', bytes.subarray(0, 31).toString('base64')],
    ['base64 of 33 bytes', Buffer.concat([bytes, Buffer.from([1])]).toString('base64')],
    ['non-canonical base64', `${bytes.toString('base64').slice(0, 42)}B=`],
    ['hex with a non-hex digit', `${bytes.toString('hex').slice(0, 63)}g`],
    ['a passphrase', 'correct horse battery staple'],
  ];

  it.each(rejected)('refuses %s, without echoing it', async (_name, value) => {
    if (_name === 'non-canonical base64') {
      // only meaningful when the spare bits of the last character are really set
      expect(Buffer.from(value, 'base64').toString('base64')).not.toBe(value);
    }
    const dataDir = await tempDir();
    const error = await veilError(() => resolveMasterKey({ dataDir, env: { VEIL_MASTER_KEY: value } }), 'KEYSTORE_INVALID');
    expect(error.message).toContain('VEIL_MASTER_KEY');
    if (value.trim().length > 0) expect(error.message).not.toContain(value.trim());
  });

  it('parseMasterKey names its origin', () => {
    expect(() => parseMasterKey('nope', 'the vault secret')).toThrow(/^the vault secret must hold/);
  });
});
