import { describe, expect, it } from 'vitest';
import { keyVersions, parseColumnSpec, parseRewrapArgs, rewrapReport } from '../../src/cli/db-rewrap.ts';
import { CliFault } from '../../src/cli/errors.ts';
import type { RewrapResult } from '../../src/db/rewrap.ts';
import { MemoryKeyProvider } from '../../src/engine/index.ts';
import { EXAMPLE_CONFIG_TEXT, veilConfigOrFail } from '../helpers/engine-fixture.ts';
import { fakeCliIo, veil } from '../helpers/cli-io.ts';

/** `veil db rewrap`'s command line and report (the pure parts; test/integration/db/db-rewrap.test.ts runs it). */
const io = { env: { VEIL_PG_URL: 'postgres://u@h/db' }, cwd: '/work' };
const base = ['--table', 'crm.customers', '--key-column', 'id', '--role', 'fraud'];

function usage(args: string[], env: Record<string, string> = io.env): string {
  try {
    parseRewrapArgs(args, { ...io, env });
  } catch (e) {
    expect(e).toBeInstanceOf(CliFault);
    return (e as Error).message;
  }
  throw new Error(`accepted: ${args.join(' ')}`);
}

describe('veil db rewrap: arguments', () => {
  it("defaults: batch 1000, rights Role=<role>, Action=Protect and Action=Unprotect, $VEIL_PG_URL, the columns of veil's trigger", () => {
    expect(parseRewrapArgs(base, io)).toEqual({
      table: { schema: 'crm', name: 'customers' },
      keyColumn: 'id',
      role: 'fraud',
      rights: [{ name: 'Role', value: 'fraud' }],
      protectEvidences: [{ name: 'Action', value: 'Protect' }],
      unprotectEvidences: [{ name: 'Action', value: 'Unprotect' }],
      batch: 1000,
      restart: false,
      databaseUrl: 'postgres://u@h/db',
      configFile: expect.stringMatching(/config\/example\.yaml$/),
      dataDir: '/work/.veil',
    });
  });

  it('takes columns, evidences, batch, restart, a database URL ($DATABASE_URL last), config and data dir', () => {
    const o = parseRewrapArgs(
      [
        ...base,
        '--column',
        'email=Customer.email',
        '--column',
        'Full_Name=Customer.name',
        '--rights',
        'Role=fraud',
        '--rights',
        'Team=risk',
        '--protect-evidence',
        'Action=Protect',
        '--unprotect-evidence',
        'Action=Reveal=1',
        '--batch',
        '250',
        '--restart',
        '--config',
        'c.yaml',
        '--data-dir',
        'd',
      ],
      { env: { DATABASE_URL: 'postgres://other/db' }, cwd: '/work' },
    );
    expect(o).toMatchObject({
      columns: [
        { column: 'email', className: 'Customer', propertyName: 'email' },
        { column: 'Full_Name', className: 'Customer', propertyName: 'name' },
      ],
      rights: [
        { name: 'Role', value: 'fraud' },
        { name: 'Team', value: 'risk' },
      ],
      unprotectEvidences: [{ name: 'Action', value: 'Reveal=1' }],
      batch: 250,
      restart: true,
      databaseUrl: 'postgres://other/db',
      configFile: '/work/c.yaml',
      dataDir: '/work/d',
    });
    expect(parseRewrapArgs([...base, '--help'], io)).toBe('help');
  });

  it('refuses what it cannot run, naming the option and never the value', () => {
    expect(usage(['--key-column', 'id', '--role', 'r'])).toBe('needs --table');
    expect(usage(['--table', 't', '--role', 'r'])).toBe('needs --key-column');
    expect(usage(['--table', 't', '--key-column', 'id'])).toContain('needs --role');
    expect(usage(base, {})).toContain('needs --database-url');
    for (const batch of ['0', '100001', '1e3', '-5', '12.5', ' 7']) expect(usage([...base, `--batch=${batch}`])).toContain('--batch must be');
    expect(usage([...base, '--rights', 'Role'])).toBe('--rights takes Name=Value');
    expect(usage([...base, '--rights', '=x'])).toBe('--rights takes Name=Value');
    expect(usage([...base, '--no-such-option'])).toContain("Unknown option '--no-such-option'");
    const secretish = 'customers; DROP TABLE customers';
    expect(usage(['--table', secretish, '--key-column', 'id', '--role', 'r'])).not.toContain(secretish);
    expect(usage(['--table', 't', '--key-column', 'id"--', '--role', 'r'])).toContain('--key-column must name a column');
  });

  it('a column is column=Class.property: an SQL identifier and veil names', () => {
    expect(parseColumnSpec('email=Customer.email')).toEqual({ column: 'email', className: 'Customer', propertyName: 'email' });
    for (const bad of [
      'email',
      'email=Customer',
      '=Customer.email',
      'e mail=Customer.email',
      'email=Cust omer.email',
      'email=Customer.e.mail',
      'x";--=Customer.email',
      'email=1Customer.email',
    ]) {
      expect(() => parseColumnSpec(bad), bad).toThrow(CliFault);
    }
  });

  it("veil db rewrap: usage errors exit 2, --help exits 0 with the rewrap's text", async () => {
    const fake = fakeCliIo('/tmp', { VEIL_PG_URL: 'postgres://x@127.0.0.1:1/db' });
    const help = await veil(fake, ['db', 'rewrap', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('Exit codes: 0 done');
    expect((await veil(fake, ['db', '--help'])).out).toContain('veil db rewrap --table T --key-column C --role R');
    const bad = await veil(fakeCliIo('/tmp', { VEIL_PG_URL: 'postgres://x@127.0.0.1:1/db' }), ['db', 'rewrap', '--table', 't']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('needs --key-column');
    // not taken for another subcommand (audit, the grant-like default) when an option comes first
    const early = await veil(fakeCliIo('/tmp', { VEIL_PSQL: '/bin/false' }), ['db', '--database-url', 'postgres://x@127.0.0.1:1/db', 'rewrap']);
    expect(early.code).toBe(2);
    expect(early.err).toContain('options go after the word rewrap');
  });
});

describe('veil db rewrap: key versions and report', () => {
  it("names each configured key at its pinned version, else the keystore's primary", () => {
    const config = veilConfigOrFail(EXAMPLE_CONFIG_TEXT);
    const keys = new MemoryKeyProvider();
    const material = (n: number) => new Uint8Array(n).fill(7);
    keys.add('customer-siv', 'aes-siv', material(64), '2025-01-01T00:00:00.000Z');
    keys.add('customer-siv', 'aes-siv', material(64), '2025-01-01T00:00:00.000Z');
    keys.add('customer-gcm', 'aes-gcm', material(32), '2025-01-01T00:00:00.000Z');
    keys.add('pan-ff1', 'ff1', material(32), '2025-01-01T00:00:00.000Z');
    keys.add('pan-ff1', 'ff1', material(32), '2025-01-01T00:00:00.000Z');
    keys.add('pseudonym', 'hmac-sha256', material(32), '2025-01-01T00:00:00.000Z');
    expect(keyVersions(config, keys)).toBe('customer-gcm@1,customer-siv@2,pan-ff1@1,pseudonym@1');
  });

  it('reports figures and refusals by JSON-quoted key, column and code', () => {
    const counts = { rowsRead: 3, rewrapped: 2, unchanged: 0, refused: 2, nulls: 1, rowsUpdated: 1, batches: 1, erased: 0 };
    const result: RewrapResult = {
      state: 'finished',
      start: { kind: 'new', reason: 'x' },
      run: counts,
      job: { ...counts, refused: 3 },
      refusals: [
        { key: 'a\u001b[2J', column: 'email', code: 'KEY_VERSION_UNKNOWN' },
        { key: '42', column: 'name', code: 'PROTECTED_VALUE_INVALID' },
      ],
    };
    const text = rewrapReport('crm.customers', 'id', result, 1234);
    expect(text).toContain('veil db rewrap crm.customers: finished\n');
    expect(text).toContain('this run:     rows read 3, values rewrapped 2, unchanged 0, refused 2, NULL 1, rows updated 1, batches 1, elapsed 1.2 s');
    expect(text).toContain('  id="a\\u001b[2J" column email: KEY_VERSION_UNKNOWN\n  id="42" column name: PROTECTED_VALUE_INVALID\n  … and 1 more\n');
    expect(text).not.toContain('\u001b');
    const done = rewrapReport('t', 'id', { ...result, state: 'done-before', start: { kind: 'done', finishedAt: new Date('2025-01-02T03:04:05Z') } }, 0);
    expect(done).toContain('already finished at 2025-01-02T03:04:05.000Z: nothing to do (--restart to rewrap again)');
    expect(done).not.toContain('this run:');
    expect(text).not.toContain('erased');
  });

  it('reports values of erased data subjects kept as stored, without failing', () => {
    const counts = { rowsRead: 4, rewrapped: 1, unchanged: 0, refused: 0, nulls: 0, rowsUpdated: 1, batches: 1, erased: 3 };
    const text = rewrapReport('t', 'id', { state: 'finished', start: { kind: 'new', reason: 'x' }, run: counts, job: counts, refusals: [] }, 0);
    expect(text).toContain(", batches 1, erased subjects' values kept 3, elapsed");
    expect(text).toContain('values of erased data subjects, kept as stored (unreadable for good): 3\n');
    expect(text).not.toContain('refused values');
  });

  it('takes --subject-column as an SQL identifier', () => {
    const base = ['--table', 't', '--key-column', 'id', '--role', 'fraud', '--database-url', 'postgres://x@h/db'];
    expect(parseRewrapArgs([...base, '--subject-column', 'customer_id'], { env: {}, cwd: '/tmp' })).toMatchObject({ subjectColumn: 'customer_id' });
    expect(parseRewrapArgs(base, { env: {}, cwd: '/tmp' })).not.toHaveProperty('subjectColumn');
    expect(() => parseRewrapArgs([...base, '--subject-column', 'a; DROP'], { env: {}, cwd: '/tmp' })).toThrow(/--subject-column/);
  });
});
