import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { VeilError, type SecretKey } from '../../src/engine/index.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { randomMasterKey, tempDir, veilError } from './helpers.ts';

/** A small keystore: one imported key, so the file is a few hundred bytes. */
async function smallKeystore() {
  const dataDir = await tempDir();
  const masterKey = randomMasterKey();
  const keystore = await LocalKeystore.open({ dataDir, masterKey });
  await keystore.import('k', 'aes-gcm', randomBytes(16).toString('hex'));
  const original = await readFile(keystore.path);
  return { dataDir, masterKey, path: keystore.path, original };
}

/** Writes `bytes` as the keystore and returns why opening it failed ('' if it opened). */
async function openFails(dataDir: string, masterKey: SecretKey, path: string, bytes: Uint8Array): Promise<string> {
  await writeFile(path, bytes);
  try {
    await LocalKeystore.open({ dataDir, masterKey });
    return '';
  } catch (error) {
    if (!(error instanceof VeilError)) return `not a VeilError: ${String(error)}`;
    if (error.code !== 'KEYSTORE_INVALID') return `code ${error.code}`;
    if (!error.message.includes(path) || error.message.includes('\n')) return `unclear message: ${error.message}`;
    const after = await readFile(path);
    if (!after.equals(bytes)) return 'the damaged file was overwritten';
    return 'KEYSTORE_INVALID';
  }
}

describe('keystore file integrity', () => {
  it('the untouched file opens', async () => {
    const { dataDir, masterKey, path, original } = await smallKeystore();
    expect(original.length).toBeLessThan(1024);
    expect(await openFails(dataDir, masterKey, path, original)).toBe('');
  });

  it.each([0x01, 0x20, 0x80, 0xff])('every single-byte change (xor 0x%s) anywhere fails with KEYSTORE_INVALID', async (mask) => {
    const { dataDir, masterKey, path, original } = await smallKeystore();
    const outcomes = new Map<string, number[]>();
    for (let i = 0; i < original.length; i++) {
      const damaged = Buffer.from(original);
      damaged[i] = (damaged[i] as number) ^ mask;
      const outcome = await openFails(dataDir, masterKey, path, damaged);
      outcomes.set(outcome, [...(outcomes.get(outcome) ?? []), i]);
    }
    expect([...outcomes.keys()]).toEqual(['KEYSTORE_INVALID']);
    expect(outcomes.get('KEYSTORE_INVALID')).toHaveLength(original.length);
  });

  it('every truncation fails with KEYSTORE_INVALID, including an empty file', async () => {
    const { dataDir, masterKey, path, original } = await smallKeystore();
    for (let length = 0; length < original.length; length++) {
      expect([length, await openFails(dataDir, masterKey, path, original.subarray(0, length))]).toEqual([length, 'KEYSTORE_INVALID']);
    }
  });

  it.each([
    ['a trailing newline', (text: string) => `${text}\n`],
    ['a trailing space', (text: string) => `${text} `],
    ['a leading byte-order mark', (text: string) => `\uFEFF${text}`],
    ['other indentation', (text: string) => JSON.stringify(JSON.parse(text), null, 4)],
    ['compact JSON', (text: string) => JSON.stringify(JSON.parse(text))],
    [
      'reordered fields',
      (text: string) => {
        const { ciphertext, ...header } = JSON.parse(text);
        return `${JSON.stringify({ ciphertext, ...header }, null, 2)}\n`;
      },
    ],
    ['an escaped character', (text: string) => text.replace('"format"', '"\\u0066ormat"')],
    ['an extra field', (text: string) => text.replace('"format"', '"extra": 1,\n  "format"')],
    ['a duplicated field', (text: string) => text.replace('"format": "veil-keystore",', '"format": "x",\n  "format": "veil-keystore",')],
    ['format version 2', (text: string) => text.replace('"version": 1', '"version": 2')],
    ['format version 1.0', (text: string) => text.replace('"version": 1', '"version": 1.0')],
    ['not JSON', () => 'hello'],
    ['JSON null', () => 'null\n'],
    ['a JSON array', () => '[]\n'],
  ])('%s fails with KEYSTORE_INVALID', async (_name, change) => {
    const { dataDir, masterKey, path, original } = await smallKeystore();
    const changed = Buffer.from(change(original.toString('utf8')), 'utf8');
    expect(changed.equals(original)).toBe(false);
    expect(await openFails(dataDir, masterKey, path, changed)).toBe('KEYSTORE_INVALID');
  });

  it('a header from one file with the ciphertext of another fails', async () => {
    const a = await smallKeystore();
    const keystore = await LocalKeystore.open({ dataDir: a.dataDir, masterKey: a.masterKey });
    await keystore.rotate('k');
    const later = JSON.parse(await readFile(a.path, 'utf8'));
    const earlier = JSON.parse(a.original.toString('utf8'));
    for (const mixed of [
      { ...earlier, ciphertext: later.ciphertext },
      { ...earlier, nonce: later.nonce },
      { ...later, kdf: earlier.kdf },
    ]) {
      const bytes = Buffer.from(`${JSON.stringify(mixed, null, 2)}\n`);
      expect(await openFails(a.dataDir, a.masterKey, a.path, bytes)).toBe('KEYSTORE_INVALID');
    }
  });

  it('tampering says "modified", a wrong master key says "master key"', async () => {
    const { dataDir, masterKey, path, original } = await smallKeystore();
    const file = JSON.parse(original.toString('utf8'));
    const last = file.ciphertext.length - 4;
    file.ciphertext = `${file.ciphertext.slice(0, last)}${file.ciphertext[last] === 'A' ? 'B' : 'A'}${file.ciphertext.slice(last + 1)}`;
    await writeFile(path, `${JSON.stringify(file, null, 2)}\n`);
    const tampered = await veilError(() => LocalKeystore.open({ dataDir, masterKey }), 'KEYSTORE_INVALID');
    expect(tampered.message).toMatch(/failed authentication.*modified/);

    await writeFile(path, original);
    const wrongKey = await veilError(() => LocalKeystore.open({ dataDir, masterKey: randomMasterKey() }), 'KEYSTORE_INVALID');
    expect(wrongKey.message).toMatch(/cannot be opened with this master key/);
  });

  it('a damaged keystore cannot be changed', async () => {
    const { dataDir, masterKey, path, original } = await smallKeystore();
    const keystore = await LocalKeystore.open({ dataDir, masterKey });
    const damaged = Buffer.from(original);
    damaged[damaged.length - 10] = (damaged[damaged.length - 10] as number) ^ 1;
    await writeFile(path, damaged);
    await veilError(() => keystore.create('other', 'aes-gcm'), 'KEYSTORE_INVALID');
    await veilError(() => keystore.reload(), 'KEYSTORE_INVALID');
    expect((await readFile(path)).equals(damaged)).toBe(true);
    // the in-memory view still serves the keys it had
    expect(keystore.info('k')?.primary).toBe(1);
  });
});
