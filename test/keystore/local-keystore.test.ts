import { randomBytes } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KEY_TYPE_NAMES, KEY_TYPES, revealKeyBytes, SecretKey } from '../../src/engine/index.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { FIXED_NOW, randomMasterKey, tempDir, veilError } from './helpers.ts';

const hexOf = (key: SecretKey | undefined): string => {
  if (!key) throw new Error('missing key');
  return Buffer.from(revealKeyBytes(key)).toString('hex');
};

async function fresh(now: () => Date = () => FIXED_NOW) {
  const dataDir = await tempDir();
  const masterKey = randomMasterKey();
  const keystore = await LocalKeystore.open({ dataDir, masterKey, now });
  return { dataDir, masterKey, keystore };
}

describe('LocalKeystore', () => {
  it('creates an empty keystore file (mode 0600) when absent', async () => {
    const dataDir = join(await tempDir(), 'new');
    const keystore = await LocalKeystore.open({ dataDir, masterKey: randomMasterKey() });
    expect(keystore.list()).toEqual([]);
    expect(keystore.path).toBe(join(dataDir, 'keystore.json'));
    expect((await stat(keystore.path)).mode & 0o777).toBe(0o600);
    expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
    const file = JSON.parse(await readFile(keystore.path, 'utf8'));
    expect(file).toMatchObject({ format: 'veil-keystore', version: 1, cipher: 'aes-256-gcm', kdf: { name: 'hkdf-sha256' } });
  });

  it('round-trips create, rotate, import and list across reopen', async () => {
    let clock = Date.parse('2025-01-01T00:00:00.000Z');
    const now = () => new Date((clock += 1000));
    const { dataDir, masterKey, keystore } = await fresh(now);

    const created = await keystore.create('customer.email', 'aes-siv');
    expect(created).toEqual({
      id: 'customer.email',
      type: 'aes-siv',
      primary: 1,
      versions: [{ version: 1, createdAt: '2025-01-01T00:00:01.000Z', origin: 'generated' }],
    });
    expect(revealKeyBytes(keystore.key('customer.email', 1) as SecretKey)).toHaveLength(64);
    const v1 = hexOf(keystore.key('customer.email', 1));

    const rotated = await keystore.rotate('customer.email');
    expect(rotated.primary).toBe(2);
    expect(rotated.versions.map((v) => v.version)).toEqual([1, 2]);
    const v2 = hexOf(keystore.key('customer.email', 2));
    expect(v2).not.toBe(v1);
    expect(hexOf(keystore.key('customer.email', 1))).toBe(v1);

    const legacy = randomBytes(16).toString('hex');
    const imported = await keystore.import('legacy-ssn', 'ff1', legacy);
    expect(imported).toMatchObject({ id: 'legacy-ssn', type: 'ff1', primary: 1, versions: [{ version: 1, origin: 'imported' }] });
    const legacy2 = randomBytes(32).toString('hex').toUpperCase();
    expect((await keystore.import('legacy-ssn', 'ff1', `${legacy2}\n`)).primary).toBe(2);
    await keystore.create('tokens_hmac', 'hmac-sha256');

    const listed = keystore.list();
    expect(listed.map((k) => k.id)).toEqual(['customer.email', 'legacy-ssn', 'tokens_hmac']);

    const reopened = await LocalKeystore.open({ dataDir, masterKey, now });
    expect(reopened.list()).toEqual(listed);
    expect(reopened.info('customer.email')).toEqual(keystore.info('customer.email'));
    expect(hexOf(reopened.key('customer.email', 1))).toBe(v1);
    expect(hexOf(reopened.key('customer.email', 2))).toBe(v2);
    expect(hexOf(reopened.key('legacy-ssn', 1))).toBe(legacy);
    expect(hexOf(reopened.key('legacy-ssn', 2))).toBe(legacy2.toLowerCase());
    expect(reopened.key('customer.email', 3)).toBeUndefined();
    expect(reopened.info('nope')).toBeUndefined();
    expect(reopened.key('nope', 1)).toBeUndefined();

    // rotating after reopen keeps every older version
    await reopened.rotate('customer.email');
    const third = await LocalKeystore.open({ dataDir, masterKey });
    expect(third.info('customer.email')?.primary).toBe(3);
    expect(hexOf(third.key('customer.email', 1))).toBe(v1);
    expect(hexOf(third.key('customer.email', 2))).toBe(v2);
  });

  it.each(KEY_TYPE_NAMES)('generates %s keys of the first listed size', async (type) => {
    const { keystore } = await fresh();
    await keystore.create('k', type);
    await keystore.rotate('k');
    for (const version of [1, 2]) {
      expect(revealKeyBytes(keystore.key('k', version) as SecretKey)).toHaveLength(KEY_TYPES[type].sizes[0]);
    }
  });

  it('list() and info() carry no material and cannot alter the keystore', async () => {
    const { keystore } = await fresh();
    await keystore.create('a', 'aes-gcm');
    const material = hexOf(keystore.key('a', 1));
    const text = JSON.stringify(keystore.list());
    expect(text).not.toContain('material');
    expect(text).not.toContain(material);
    expect(text).not.toContain(Buffer.from(material, 'hex').toString('base64'));
    const info = keystore.list()[0] as unknown as { versions: { version: number }[] };
    info.versions[0]!.version = 99;
    expect(keystore.info('a')?.versions[0]?.version).toBe(1);
  });

  it('keeps the material encrypted on disk', async () => {
    const { keystore } = await fresh();
    const hex = randomBytes(32).toString('hex');
    await keystore.import('imported', 'aes-gcm', hex);
    await keystore.create('generated', 'aes-siv');
    const file = await readFile(keystore.path, 'utf8');
    for (const material of [hex, hexOf(keystore.key('generated', 1))]) {
      expect(file.toLowerCase()).not.toContain(material);
      expect(file).not.toContain(Buffer.from(material, 'hex').toString('base64').slice(0, 20));
    }
    expect(file).not.toContain('imported');
  });

  it('refuses duplicates and unknown keys with stable codes', async () => {
    const { keystore } = await fresh();
    await keystore.create('a', 'aes-gcm');
    await veilError(() => keystore.create('a', 'aes-gcm'), 'KEY_EXISTS');
    await veilError(() => keystore.create('a', 'ff1'), 'KEY_EXISTS');
    const missing = await veilError(() => keystore.rotate('b'), 'KEY_NOT_FOUND');
    expect(missing.message).toContain('b');
    const otherType = await veilError(() => keystore.import('a', 'ff1', randomBytes(32).toString('hex')), 'KEY_EXISTS');
    expect(otherType.message).toContain('aes-gcm');
    const hex = randomBytes(32).toString('hex');
    await keystore.import('c', 'aes-gcm', hex);
    const again = await veilError(() => keystore.import('c', 'aes-gcm', hex.toUpperCase()), 'KEY_EXISTS');
    expect(again.message).not.toContain(hex);
    expect(keystore.info('c')?.versions).toHaveLength(1);
  });

  it.each([
    ['odd number of digits', 'abc'],
    ['non-hex', `${randomBytes(31).toString('hex')}zz`],
    ['wrong size', randomBytes(20).toString('hex')],
    ['too long', randomBytes(65).toString('hex')],
    ['empty', ''],
    ['base64 instead of hex', randomBytes(32).toString('base64')],
  ])('import refuses %s material with KEY_MATERIAL_INVALID, without echoing it', async (_name, hex) => {
    const { keystore } = await fresh();
    const error = await veilError(() => keystore.import('k', 'aes-siv', hex), 'KEY_MATERIAL_INVALID');
    if (hex.length > 0) {
      expect(error.message).not.toContain(hex);
      expect(error.message).not.toContain(hex.slice(0, 8));
    }
    expect(keystore.info('k')).toBeUndefined();
    expect(keystore.list()).toEqual([]);
  });

  it.each(['', 'Upper', '-lead', '.lead', 'a b', 'a/b', 'x'.repeat(65), 'ünïcode'])('rejects the key id %j', async (id) => {
    const { keystore } = await fresh();
    await expect(keystore.create(id, 'aes-gcm')).rejects.toThrow(RangeError);
    await expect(keystore.import(id, 'aes-gcm', randomBytes(32).toString('hex'))).rejects.toThrow(RangeError);
  });

  it('accepts ids up to 64 characters', async () => {
    const { keystore } = await fresh();
    await keystore.create(`0${'a'.repeat(63)}`, 'aes-gcm');
    await keystore.create('a', 'aes-gcm');
    expect(keystore.list()).toHaveLength(2);
  });

  it('refuses another master key with KEYSTORE_INVALID', async () => {
    const { dataDir, keystore } = await fresh();
    await keystore.create('a', 'aes-gcm');
    const error = await veilError(() => LocalKeystore.open({ dataDir, masterKey: randomMasterKey() }), 'KEYSTORE_INVALID');
    expect(error.message).toContain('master key');
    expect(error.message).toContain(keystore.path);
  });

  it('writes atomically: no temp or lock files stay behind, mode stays 0600', async () => {
    const { dataDir, keystore } = await fresh();
    await keystore.create('a', 'aes-gcm');
    await keystore.rotate('a');
    await keystore.import('b', 'hmac-sha256', randomBytes(48).toString('hex'));
    await veilError(() => keystore.create('a', 'aes-gcm'), 'KEY_EXISTS');
    expect((await readdir(dataDir)).sort()).toEqual(['keystore.json']);
    expect((await stat(keystore.path)).mode & 0o777).toBe(0o600);
  });

  it('re-encrypts with a fresh salt and nonce on every write', async () => {
    const { keystore } = await fresh();
    const headers = new Set<string>();
    for (let i = 0; i < 3; i++) {
      await keystore.create(`k${i}`, 'aes-gcm');
      const file = JSON.parse(await readFile(keystore.path, 'utf8'));
      headers.add(file.kdf.salt).add(file.nonce);
    }
    expect(headers.size).toBe(6);
  });

  it('does not lose changes made through two handles on the same file', async () => {
    const { dataDir, masterKey, keystore: first } = await fresh();
    const second = await LocalKeystore.open({ dataDir, masterKey });
    await first.create('a', 'aes-gcm');
    await second.create('b', 'aes-gcm');
    await Promise.all([first.rotate('a'), second.rotate('a'), first.create('c', 'ff1'), second.create('d', 'ff3-1')]);
    const reopened = await LocalKeystore.open({ dataDir, masterKey });
    expect(reopened.list().map((k) => k.id)).toEqual(['a', 'b', 'c', 'd']);
    expect(reopened.info('a')?.primary).toBe(3);
    await first.reload();
    expect(first.list()).toEqual(reopened.list());
    expect(hexOf(first.key('a', 3))).toBe(hexOf(reopened.key('a', 3)));
  });

  it('a failed change leaves the keystore as it was', async () => {
    const { dataDir, masterKey, keystore } = await fresh();
    await keystore.create('a', 'aes-gcm');
    const before = await readFile(keystore.path);
    await veilError(() => keystore.rotate('missing'), 'KEY_NOT_FOUND');
    await veilError(() => keystore.import('a', 'aes-gcm', 'zz'), 'KEY_MATERIAL_INVALID');
    expect((await readFile(keystore.path)).equals(before)).toBe(true);
    expect((await LocalKeystore.open({ dataDir, masterKey })).list()).toEqual(keystore.list());
  });
});
