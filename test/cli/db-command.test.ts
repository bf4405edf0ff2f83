import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { installSql } from '../../src/db/install-sql.ts';
import { fakeCliIo, tempDir, veil } from '../helpers/cli-io.ts';

describe('veil db', () => {
  it('prints help and exits 2 without a subcommand; --help exits 0', async () => {
    const io = fakeCliIo(await tempDir());
    const none = await veil(io, ['db']);
    expect(none.code).toBe(2);
    expect(none.out).toContain('veil db install');
    expect((await veil(io, ['db', '--help'])).code).toBe(0);
  });

  it('install prints the SQL to stdout by default', async () => {
    const io = fakeCliIo(await tempDir());
    const run = await veil(io, ['db', 'install']);
    expect(run.code).toBe(0);
    expect(run.out).toBe(installSql());
  });

  it('--apply and configure need a database URL; configure needs its three options', async () => {
    const io = fakeCliIo(await tempDir());
    const apply = await veil(io, ['db', 'install', '--apply']);
    expect(apply.code).toBe(2);
    expect(apply.err).toContain('--database-url');
    const configure = await veil(io, ['db', 'configure', '--veil-url', 'http://v']);
    expect(configure.code).toBe(2);
    expect(configure.err).toContain('--client-secret-file');
  });

  it('configure never echoes the secret, even when psql fails', async () => {
    const cwd = await tempDir();
    await writeFile(join(cwd, 'secret.txt'), 'very-secret-value\n');
    const io = fakeCliIo(cwd, { VEIL_PSQL: '/bin/false', VEIL_PG_URL: 'postgres://x@127.0.0.1:1/db' });
    const run = await veil(io, ['db', 'configure', '--veil-url', 'http://v', '--client-id', 'c', '--client-secret-file', 'secret.txt']);
    expect(run.code).toBe(1);
    expect(run.err).toContain('psql failed');
    expect(run.out + run.err).not.toContain('very-secret-value');
  });

  it('grant-writer, grant-reader, grant-lookup, revoke, rate-limit and audit check their options before running psql', async () => {
    const io = fakeCliIo(await tempDir(), { VEIL_PSQL: '/bin/false', VEIL_PG_URL: 'postgres://x@127.0.0.1:1/db' });
    const help = await veil(io, ['db', '--help']);
    for (const sub of ['grant-writer', 'grant-reader', 'grant-lookup', 'revoke', 'rate-limit', 'audit']) expect(help.out).toContain(`veil db ${sub}`);
    const cases: [string[], string][] = [
      [['grant-writer', '--role', 'w'], 'needs --table'],
      [['grant-writer', '--table', 't'], 'needs --role'],
      [['grant-reader', '--role', 'r'], 'needs --veil-role'],
      [['grant-lookup', '--role', 'l', '--values-per-minute=-5'], 'must be a positive integer'],
      [['grant-lookup', '--role', 'l', '--values-per-minute', '0'], 'from 1 to'],
      [['rate-limit', '--role', 'r'], 'needs --values-per-minute'],
      [['rate-limit', '--role', 'r', '--values-per-minute', '1e3'], 'must be a positive integer'],
      [['revoke', '--role', 'a\nb'], 'one line'],
      [['audit', '--records', '0'], '--records'],
    ];
    for (const [args, message] of cases) {
      const run = await veil(io, ['db', ...args]);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.err, args.join(' ')).toContain(message);
    }
    // valid options reach psql (here /bin/false): exit 1, nothing changed
    const failed = await veil(io, ['db', 'rate-limit', '--role', 'public', '--values-per-minute', 'default']);
    expect(failed.code).toBe(1);
    expect(failed.err).toContain('psql failed');
  });

  it('rejects an out-of-range timeout and an unreadable secret file without naming its content', async () => {
    const io = fakeCliIo(await tempDir(), { VEIL_PG_URL: 'postgres://x@127.0.0.1:1/db' });
    expect((await veil(io, ['db', 'configure', '--veil-url', 'http://v', '--client-id', 'c', '--client-secret-file', 's', '--timeout-ms', '5'])).code).toBe(2);
    const missing = await veil(io, ['db', 'configure', '--veil-url', 'http://v', '--client-id', 'c', '--client-secret-file', 'nope.txt']);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('cannot read the client secret file');
  });

  it('configure --socket [--socket-lease] sets the local socket and leases in the same script; --socket none goes back to HTTP', async () => {
    const cwd = await tempDir();
    await writeFile(join(cwd, 'secret.txt'), 'very-secret-value\n');
    // a psql that keeps the script it is given
    await writeFile(join(cwd, 'psql'), '#!/bin/sh\ncat > "$(dirname "$0")/script.sql"\n', { mode: 0o755 });
    const io = fakeCliIo(cwd, { VEIL_PSQL: join(cwd, 'psql'), VEIL_PG_URL: 'postgres://x@127.0.0.1:1/db' });
    const base = ['db', 'configure', '--veil-url', 'http://v', '--client-id', 'c', '--client-secret-file', 'secret.txt'];
    const script = async (...extra: string[]) => {
      const run = await veil(io, [...base, ...extra]);
      expect(run.code, extra.join(' ')).toBe(0);
      return readFile(join(cwd, 'script.sql'), 'utf8');
    };
    expect(await script('--socket', '/run/veil/db.sock', '--socket-lease')).toContain("SELECT veil.configure_socket('/run/veil/db.sock', lease => true);");
    expect(await script('--socket', '/run/veil/db.sock')).toContain("SELECT veil.configure_socket('/run/veil/db.sock', lease => false);");
    expect(await script('--socket', 'none')).toContain('SELECT veil.configure_socket(NULL, lease => false);');
    expect(await script()).not.toContain('configure_socket');
    // the secret stays COPY data, never a statement's text
    expect(
      (await script('--socket', '/run/veil/db.sock', '--socket-lease'))
        .split('\n')
        .filter((l) => l.includes('very-secret-value'))
        .every((l) => !/SELECT|configure/i.test(l)),
    ).toBe(true);
    const refused: [string[], string][] = [
      [['--socket-lease'], '--socket-lease needs --socket'],
      [['--socket', 'none', '--socket-lease'], '--socket-lease needs --socket'],
      [['--socket', 'relative.sock'], 'must be absolute'],
    ];
    for (const [extra, message] of refused) {
      const run = await veil(io, [...base, ...extra]);
      expect(run.code, extra.join(' ')).toBe(2);
      expect(run.err, extra.join(' ')).toContain(message);
    }
  });
});
