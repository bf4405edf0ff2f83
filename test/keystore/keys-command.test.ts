import { randomBytes } from 'node:crypto';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keysCommand } from '../../src/cli/keys-command.ts';
import { revealKeyBytes, type SecretKey } from '../../src/engine/index.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { resolveMasterKey } from '../../src/keystore/master-key.ts';
import { fakeIo, tempDir, type FakeIo } from './helpers.ts';

/** Every byte any command printed in this file; checked for material at the end. */
const printed: string[] = [];
/** Material (hex) that passed through the CLI in this file. */
const secrets: string[] = [];

async function veil(io: FakeIo, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  io.out.length = 0;
  io.err.length = 0;
  const code = await keysCommand(args, io);
  const out = io.out.join('');
  const err = io.err.join('');
  printed.push(out, err);
  return { code, out, err };
}

function secretHex(bytes: number): string {
  const hex = randomBytes(bytes).toString('hex');
  secrets.push(hex);
  return hex;
}

afterAll(() => {
  const all = printed.join('\n');
  expect(secrets.length).toBeGreaterThan(5);
  for (const hex of secrets) {
    expect(all).not.toContain(hex);
    expect(all).not.toContain(hex.toUpperCase());
    expect(all).not.toContain(hex.slice(0, 12));
    expect(all).not.toContain(Buffer.from(hex, 'hex').toString('base64').slice(0, 12));
  }
});

describe('veil keys', () => {
  it('create, rotate, import (stdin), list and list --json', async () => {
    const cwd = await tempDir();
    const io = fakeIo(cwd);

    const created = await veil(io, 'create', '--id', 'customer.email', '--type', 'aes-siv');
    expect(created).toMatchObject({ code: 0, out: 'created key customer.email (aes-siv), version 1\n' });
    expect(created.err).toContain(`created a development master key at ${join(cwd, '.veil', 'master.key')}`);

    const rotated = await veil(io, 'rotate', '--id', 'customer.email');
    expect(rotated.code).toBe(0);
    expect(rotated.out).toContain('version 2 is primary');
    expect(rotated.err).toContain(`using the development master key at ${join(cwd, '.veil', 'master.key')}`);

    io.stdin = `${secretHex(32)}\n`;
    const imported = await veil(io, 'import', '--id', 'legacy', '--type', 'ff1', '--hex', '-');
    expect(imported).toMatchObject({ code: 0, out: 'imported key legacy (ff1) as version 1, now primary\n' });
    expect(imported.err).not.toContain('shell history');

    const list = await veil(io, 'list');
    expect(list.code).toBe(0);
    expect(list.out).toBe(
      [
        'customer.email  aes-siv  primary v2',
        '  v1  2025-03-04T05:06:07.000Z  generated',
        '  v2  2025-03-04T05:06:07.000Z  generated  (primary)',
        'legacy  ff1  primary v1',
        '  v1  2025-03-04T05:06:07.000Z  imported  (primary)',
        '',
      ].join('\n'),
    );

    const json = await veil(io, 'list', '--json');
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.out);
    expect(parsed.keystore).toBe(join(cwd, '.veil', 'keystore.json'));
    expect(parsed.keys.map((k: { id: string }) => k.id)).toEqual(['customer.email', 'legacy']);
    expect(parsed.keys[0]).toEqual({
      id: 'customer.email',
      type: 'aes-siv',
      primary: 2,
      versions: [
        { version: 1, createdAt: '2025-03-04T05:06:07.000Z', origin: 'generated' },
        { version: 2, createdAt: '2025-03-04T05:06:07.000Z', origin: 'generated' },
      ],
    });

    // the generated material never shows up either
    const { key } = await resolveMasterKey({ dataDir: join(cwd, '.veil'), env: {} });
    const keystore = await LocalKeystore.open({ dataDir: join(cwd, '.veil'), masterKey: key });
    for (const version of [1, 2]) {
      secrets.push(Buffer.from(revealKeyBytes(keystore.key('customer.email', version) as SecretKey)).toString('hex'));
    }
  });

  it('import with --hex on the command line works and warns about shell history', async () => {
    const io = fakeIo(await tempDir());
    const hex = secretHex(32);
    const result = await veil(io, 'import', '--id', 'k', '--type', 'hmac-sha256', '--hex', hex);
    expect(result.code).toBe(0);
    expect(result.err).toContain('prefer --hex -');
    const again = await veil(io, 'import', '--id', 'k', '--type', 'hmac-sha256', '--hex', '-');
    expect(again.code).toBe(1); // stdin is empty
  });

  it('uses VEIL_MASTER_KEY quietly, --data-dir relative to cwd, and VEIL_DATA_DIR', async () => {
    const cwd = await tempDir();
    const env = { VEIL_MASTER_KEY: randomBytes(32).toString('base64'), VEIL_DATA_DIR: join(cwd, 'from-env') };
    const io = fakeIo(cwd, env);
    const viaEnv = await veil(io, 'create', '--id', 'a', '--type', 'aes-gcm');
    expect(viaEnv).toEqual({ code: 0, out: 'created key a (aes-gcm), version 1\n', err: '' });
    await stat(join(cwd, 'from-env', 'keystore.json'));
    await expect(stat(join(cwd, 'from-env', 'master.key'))).rejects.toThrow();

    expect((await veil(io, 'create', '--id', 'b', '--type', 'aes-gcm', '--data-dir', 'rel')).code).toBe(0);
    await stat(join(cwd, 'rel', 'keystore.json'));
    expect((await veil(io, 'list', '--data-dir', 'rel')).out).toContain('b  aes-gcm');

    const wrongKey = fakeIo(cwd, { ...env, VEIL_MASTER_KEY: randomBytes(32).toString('hex') });
    const refused = await veil(wrongKey, 'list');
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^veil keys: keystore .* cannot be opened with this master key.*\[KEYSTORE_INVALID\]\n$/);
  });

  it('prints "no keys" for an empty keystore', async () => {
    const cwd = await tempDir();
    const result = await veil(fakeIo(cwd), 'list');
    expect(result).toMatchObject({ code: 0, out: `no keys in ${join(cwd, '.veil', 'keystore.json')}\n` });
  });

  it.each([
    ['no action', []],
    ['two actions', ['list', 'create']],
    ['an unknown action', ['delete', '--id', 'a']],
    ['an unknown option', ['list', '--force']],
    ['a missing --id', ['create', '--type', 'aes-gcm']],
    ['a missing --type', ['create', '--id', 'a']],
    ['a missing --hex', ['import', '--id', 'a', '--type', 'aes-gcm']],
    ['an option without its value', ['create', '--type', 'aes-gcm', '--id']],
    ['an unknown --type', ['create', '--id', 'a', '--type', 'des']],
    ['an invalid --id', ['create', '--id', 'Bad Id', '--type', 'aes-gcm']],
    ['--json on create', ['create', '--id', 'a', '--type', 'aes-gcm', '--json']],
    ['--hex on create', ['create', '--id', 'a', '--type', 'aes-gcm', '--hex', '-']],
    ['--type on rotate', ['rotate', '--id', 'a', '--type', 'aes-gcm']],
  ])('exits 2 on %s, with a one-line reason', async (_name, args) => {
    const cwd = await tempDir();
    const result = await veil(fakeIo(cwd), ...args);
    expect(result.code).toBe(2);
    expect(result.out).toBe('');
    expect(result.err).toMatch(/^veil keys: [^\n]+\nRun 'veil keys help' for usage\.\n$/);
    await expect(stat(join(cwd, '.veil'))).rejects.toThrow(); // nothing was touched
  });

  it('does not echo a value pasted in place of the action', async () => {
    const hex = secretHex(32);
    const result = await veil(fakeIo(await tempDir()), hex);
    expect(result.code).toBe(2);
  });

  it('help prints usage and exits 0', async () => {
    const io = fakeIo(await tempDir());
    for (const args of [['help'], ['--help'], ['create', '-h']]) {
      const result = await veil(io, ...args);
      expect(result.code).toBe(0);
      expect(result.out).toContain('Usage: veil keys');
      expect(result.out).toContain('--hex <hex|->');
    }
  });

  it('exits 1 with a one-line message on keystore errors', async () => {
    const cwd = await tempDir();
    const io = fakeIo(cwd);
    expect((await veil(io, 'create', '--id', 'a', '--type', 'aes-gcm')).code).toBe(0);

    const expectOne = (result: { code: number; err: string; out: string }, code: string) => {
      expect(result.code).toBe(1);
      expect(result.out).toBe('');
      const lines = result.err.trimEnd().split('\n');
      expect(lines.at(-1)).toMatch(new RegExp(`^veil keys: .*\\[${code}\\]$`));
      expect(result.err).not.toContain('    at ');
    };
    expectOne(await veil(io, 'create', '--id', 'a', '--type', 'aes-gcm'), 'KEY_EXISTS');
    expectOne(await veil(io, 'rotate', '--id', 'missing'), 'KEY_NOT_FOUND');

    io.stdin = secretHex(31);
    expectOne(await veil(io, 'import', '--id', 'b', '--type', 'aes-gcm', '--hex', '-'), 'KEY_MATERIAL_INVALID');
    io.stdin = `${secretHex(31)}zz`;
    expectOne(await veil(io, 'import', '--id', 'b', '--type', 'aes-gcm', '--hex', '-'), 'KEY_MATERIAL_INVALID');
    const wrongSize = secretHex(20);
    expectOne(await veil(io, 'import', '--id', 'b', '--type', 'aes-gcm', '--hex', wrongSize), 'KEY_MATERIAL_INVALID');
    io.stdin = secretHex(32);
    expectOne(await veil(io, 'import', '--id', 'a', '--type', 'ff1', '--hex', '-'), 'KEY_EXISTS');

    const badEnv = fakeIo(cwd, { VEIL_MASTER_KEY: secretHex(31) });
    expectOne(await veil(badEnv, 'list'), 'KEYSTORE_INVALID');

    const path = join(cwd, '.veil', 'keystore.json');
    const bytes = await readFile(path);
    bytes[bytes.length - 5] = (bytes[bytes.length - 5] as number) ^ 1;
    await writeFile(path, bytes);
    expectOne(await veil(io, 'list'), 'KEYSTORE_INVALID');
  });

  it('exits 1 when the development master key is readable by others', async () => {
    const cwd = await tempDir();
    const io = fakeIo(cwd);
    expect((await veil(io, 'list')).code).toBe(0);
    await chmod(join(cwd, '.veil', 'master.key'), 0o644);
    const result = await veil(io, 'list');
    expect(result.code).toBe(1);
    expect(result.err).toContain('mode 0644');
  });
});
