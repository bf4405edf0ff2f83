import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/processes.ts';
import { countingProxy, databaseUrl, psql, readSecret, sql, startVeil, type VeilProcess } from '../../helpers/postgres.ts';
import { sessionGate } from '../../helpers/pg-gate.ts';

/**
 * The database layer against a real PostgreSQL 15 with PL/Python (started by the tests' global
 * setup with scripts/pg-env.sh) and a real `veil serve` process, driven with psql as a second
 * client. veil's development client veil-dev holds the example configuration's roles: ingest
 * (Protect on Customer.*), support (Protect/Unprotect on Customer.email only), fraud (all).
 */
const run = promisify(execFile);
const tag = `${process.pid}_${randomBytes(3).toString('hex')}`;
const db = `veil_triggers_${tag}`;
const role = { writer: `writer_${tag}`, fraud: `fraud_${tag}`, support: `support_${tag}`, nobody: `nobody_${tag}` };
const PROTECTED = /^[A-Za-z0-9_-]{30,}$/;

let veil: VeilProcess;
const on = (script: string, user = 'postgres') => sql(script, { database: db, user });
const attempt = (script: string, user = 'postgres') => psql(script, { database: db, user });

async function veilCli(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(join(ROOT, 'bin/veil'), args, { env: { ...process.env, VEIL_PG_URL: '' }, maxBuffer: 16 << 20 });
}

async function configure(veilUrl: string, protectRole = 'ingest'): Promise<void> {
  await veilCli(
    'db',
    'configure',
    '--database-url',
    databaseUrl(db),
    '--veil-url',
    veilUrl,
    '--client-id',
    'veil-dev',
    '--client-secret-file',
    veil.secretFile,
    '--protect-role',
    protectRole,
  );
}

beforeAll(async () => {
  veil = await startVeil();
  await sql(
    `CREATE DATABASE ${db};\n${Object.values(role)
      .map((r) => `CREATE ROLE ${r} LOGIN;`)
      .join('\n')}`,
  );
  await veilCli('db', 'install', '--apply', '--database-url', databaseUrl(db));
  await configure(veil.url);
  await on(`
    CREATE TABLE customers (id int PRIMARY KEY, email text, name varchar(300), city text);
    SELECT veil.attach('customers', 'email', 'Customer', 'email');
    SELECT veil.attach('customers', 'name', 'Customer', 'name');
    SELECT veil.grant_writer('${role.writer}', 'customers');
    GRANT SELECT ON customers TO ${role.writer};
    CREATE TABLE control_plain (v text);
    GRANT SELECT, INSERT ON control_plain TO ${role.writer};
    SELECT veil.create_read_view('customers', 'customers_clear');
    SELECT veil.grant_reader('${role.fraud}', 'fraud', 'customers', 'customers_clear');
    SELECT veil.grant_lookup('${role.fraud}');
    SELECT veil.grant_reader('${role.support}', 'support', 'customers', 'customers_clear');
    -- granted like a reader, but mapped to no veil role
    SELECT veil.grant_reader('${role.nobody}', 'none', 'customers', 'customers_clear');
    SELECT veil.unmap_role('${role.nobody}');`);
}, 120_000);

afterAll(async () => {
  await sql(
    `DROP DATABASE IF EXISTS ${db} WITH (FORCE);\n${Object.values(role)
      .map((r) => `DROP ROLE IF EXISTS ${r};`)
      .join('\n')}`,
  ).catch(() => undefined);
  await veil?.close();
});

describe('veil db install', () => {
  it('prints the SQL without applying it, and applying it again is harmless (re-runnable)', async () => {
    const { stdout } = await veilCli('db', 'install');
    expect(stdout).toContain('CREATE SCHEMA IF NOT EXISTS veil;');
    expect(stdout).toContain('LANGUAGE plpython3u');
    await veilCli('db', 'install', '--apply', '--database-url', databaseUrl(db));
    expect(await on(`SELECT count(*) FROM veil.mapped_columns('customers')`)).toEqual(['2']);
  });
});

describe('PostgreSQL triggers (real PostgreSQL, real veil serve)', () => {
  it('an INSERT through psql stores only protected values; NULL stays NULL; other columns are untouched', async () => {
    await on(`INSERT INTO customers VALUES (1, 'alice@example.com', 'Alice Liddell', 'Oxford'), (2, NULL, 'Bob Null-Email', 'Rome');`, role.writer);
    const rows = (await on("SELECT id, coalesce(email, '<null>'), name, city FROM customers ORDER BY id")).map((l) => l.split('|'));
    expect(rows[0]![1]).toMatch(PROTECTED);
    expect(rows[0]![2]).toMatch(PROTECTED);
    expect(rows[0]![3]).toBe('Oxford');
    expect(rows[1]![1]).toBe('<null>');
    expect(rows.flat().join()).not.toMatch(/alice|Liddell|Bob/);
    // the trigger protects as veil.protect does (AES-SIV is deterministic for Customer.email)
    expect(await on(`SELECT email = veil.protect('Customer', 'email', 'alice@example.com') FROM customers WHERE id = 1`)).toEqual(['t']);
  });

  it('an UPDATE protects the columns it changes and leaves the others as stored', async () => {
    const before = await on('SELECT email, name FROM customers WHERE id = 1');
    await on(`UPDATE customers SET city = 'Cambridge' WHERE id = 1;`, role.writer);
    expect(await on('SELECT email, name FROM customers WHERE id = 1')).toEqual(before);
    await on(`UPDATE customers SET email = 'alice@wonderland.example' WHERE id = 1;`, role.writer);
    const [email, name] = (await on('SELECT email, name FROM customers WHERE id = 1'))[0]!.split('|');
    expect(email).toMatch(PROTECTED);
    expect(name).toBe(before[0]!.split('|')[1]);
    expect(await on('SELECT email FROM customers_clear WHERE id = 1', role.fraud)).toEqual(['alice@wonderland.example']);
  });

  it('COPY fires the trigger too', async () => {
    const copy = await attempt(`COPY customers (id, email, name, city) FROM STDIN WITH (FORMAT csv);\n3,carol@example.com,Carol C,Lyon\n\\.`);
    expect(copy.code, copy.stderr).toBe(0);
    expect(await on(`SELECT email ~ '^[A-Za-z0-9_-]{30,}$' AND name ~ '^[A-Za-z0-9_-]{30,}$' FROM customers WHERE id = 3`)).toEqual(['t']);
    expect(await on('SELECT email, name FROM customers_clear WHERE id = 3', role.fraud)).toEqual(['carol@example.com|Carol C']);
  });

  it('a read view shows cleartext to a mapped role, keeps what its veil role may not see protected, and shows an unmapped role protected values', async () => {
    const stored = await on('SELECT id, email, name FROM customers WHERE id = 1');
    expect(await on('SELECT id, email, name, city FROM customers_clear WHERE id = 1', role.fraud)).toEqual([
      '1|alice@wonderland.example|Alice Liddell|Cambridge',
    ]);
    // support may unprotect Customer.email, not Customer.name: the name stays protected
    const [, supportEmail, supportName] = (await on('SELECT id, email, name FROM customers_clear WHERE id = 1', role.support))[0]!.split('|');
    expect(supportEmail).toBe('alice@wonderland.example');
    expect(supportName).toBe(stored[0]!.split('|')[2]);
    expect(await on('SELECT id, email, name FROM customers_clear WHERE id = 1', role.nobody)).toEqual(stored);
    expect(await on("SELECT coalesce(email, '<null>') FROM customers_clear WHERE id = 2", role.fraud)).toEqual(['<null>']);
    // veil.unprotect itself refuses an unmapped role
    const strict = await attempt(`SELECT veil.unprotect('Customer', 'email', email) FROM customers_clear WHERE id = 1`, role.nobody);
    expect(strict.code).not.toBe(0);
    expect(strict.stderr).toMatch(/ERROR: {2}42501: .*veil: DB_ROLE_UNMAPPED/);
  });

  it('the read view calls veil once per row for all its protected columns', async () => {
    const lines = await on('SELECT count(*) FROM customers_clear;\nSELECT veil.session_stats()', role.fraud);
    const stats = JSON.parse(lines[1]!) as { transforms: number; connects: number };
    expect(lines[0]).toBe('3');
    expect(stats.transforms).toBe(3);
    expect(stats.connects).toBe(1);
  });

  it('array variants protect and unprotect a set in one call, NULL elements and NULL arrays stay NULL', async () => {
    const [protectedArray, roundTrip, nullArray] = await on(
      `
      SELECT veil.protect_many('Customer', 'email', ARRAY['a@example.com', NULL, 'b@example.com']);
      SELECT veil.unprotect_many('Customer', 'email', veil.protect_many('Customer', 'email', ARRAY['a@example.com', NULL, 'b@example.com']));
      SELECT coalesce(veil.protect_many('Customer', 'email', NULL)::text, '<null>');`,
      role.fraud,
    );
    const elements = protectedArray!.slice(1, -1).split(',');
    expect(elements).toHaveLength(3);
    expect(elements[0]).toMatch(PROTECTED);
    expect(elements[1]).toBe('NULL');
    expect(roundTrip).toBe('{a@example.com,NULL,b@example.com}');
    expect(nullArray).toBe('<null>');
    // 2,500 values: split into calls within veil's limits, order kept
    const big = await on(
      `
      SELECT bool_and(u = 'person-' || i), count(*)
      FROM unnest(veil.unprotect_many('Customer', 'name', veil.protect_many('Customer', 'name',
        ARRAY(SELECT 'person-' || g FROM generate_series(1, 2500) g ORDER BY g)))) WITH ORDINALITY AS t(u, i);
      SELECT veil.session_stats()->>'transforms';`,
      role.fraud,
    );
    expect(big).toEqual(['t|2500', '6']);
  });

  it('keeps one HTTP connection per backend: 100 rows in one statement open one connection; a dropped connection is reopened', async () => {
    const proxy = await countingProxy(veil.port);
    try {
      await configure(proxy.url);
      const lines = await on(
        `
        INSERT INTO customers (id, email, name) SELECT 1000 + g, 'bulk' || g || '@example.com', 'Bulk ' || g FROM generate_series(1, 100) g;
        SELECT veil.session_stats();`,
        role.writer,
      );
      const stats = JSON.parse(lines[0]!) as { connects: number; transforms: number; tokens: number };
      expect(proxy.connections).toBe(1);
      expect(stats).toMatchObject({ connects: 1, transforms: 100, tokens: 1 });
      expect(await on(`SELECT count(*) FROM customers WHERE id > 1000 AND email ~ '^[A-Za-z0-9_-]{30,}$' AND name ~ '^[A-Za-z0-9_-]{30,}$'`)).toEqual(['100']);

      // the server side closes the kept-alive connection between two statements of one session (held at a gate meanwhile)
      const gate = await sessionGate(db);
      const session = attempt(
        `INSERT INTO customers (id, email) VALUES (2001, 'first@example.com');
        ${gate.wait}
        INSERT INTO customers (id, email) VALUES (2002, 'second@example.com');
        SELECT veil.session_stats()->>'connects';`,
        role.writer,
      );
      try {
        await gate.reached();
        proxy.dropAll();
      } finally {
        await gate.open();
      }
      const result = await session;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout.trim().split('\n').pop()).toBe('2');
      expect(proxy.connections).toBe(3);
    } finally {
      await configure(veil.url);
      await proxy.close();
    }
  });

  it('fails closed when veil refuses (the protect role lacks Protect on a column): the statement errors, nothing is stored', async () => {
    await configure(veil.url, 'support');
    try {
      const r = await attempt(`INSERT INTO customers (id, email, name) VALUES (3001, 'refused@example.com', 'Refused Name');`, role.writer);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/ERROR: {2}42501: .*veil: ACTION_NOT_GRANTED: .*\(Customer\.name\)/);
      expect(r.stderr).toContain('HINT:');
      expect(r.stderr).not.toMatch(/refused@|Refused Name/);
      expect(await on('SELECT count(*) FROM customers WHERE id = 3001')).toEqual(['0']);
    } finally {
      await configure(veil.url);
    }
  });

  it('without credentials a call fails with DB_NOT_CONFIGURED', async () => {
    const r = await attempt(`BEGIN; DELETE FROM veil.settings; SELECT veil.protect('Customer', 'email', 'x@example.com');`);
    expect(r.stderr).toMatch(/ERROR: {2}55000: .*veil: DB_NOT_CONFIGURED/);
  });

  it('a wrong client secret fails with DB_CREDENTIALS_REFUSED, a NULL class with DB_ARGUMENT_INVALID; neither message holds the value', async () => {
    const refused = await attempt(
      `BEGIN; UPDATE veil.settings SET client_secret = 'not-the-secret'; SELECT veil.protect('Customer', 'email', 'x7@example.com');`,
    );
    expect(refused.stderr).toMatch(/ERROR: {2}42501: .*veil: DB_CREDENTIALS_REFUSED/);
    const invalid = await attempt(`SELECT veil.protect(NULL, 'email', 'x8@example.com');`);
    expect(invalid.stderr).toMatch(/ERROR: {2}22023: .*veil: DB_ARGUMENT_INVALID/);
    for (const r of [refused, invalid]) expect(r.stderr).not.toMatch(/x[78]@example\.com|not-the-secret/);
  });

  it('attach refuses a column that cannot hold a protected string', async () => {
    const r = await attempt(`CREATE TABLE numbers (n integer); SELECT veil.attach('numbers', 'n', 'Customer', 'cardNumber');`);
    expect(r.stderr).toMatch(/ERROR: {2}42804: .*must be text or varchar/);
  });

  it('an ordinary role cannot read or change the credentials, nor call the administration functions', async () => {
    const secret = await readSecret(veil);
    for (const statement of [
      'SELECT * FROM veil.settings',
      'SELECT client_secret FROM veil.settings',
      `UPDATE veil.settings SET veil_url = 'http://127.0.0.1:1'`,
      `INSERT INTO veil.role_map VALUES ('${role.nobody}', 'fraud')`,
      `SELECT veil.map_role('${role.nobody}', 'fraud')`,
      `SELECT veil.configure('http://127.0.0.1:1', 'x', 'y', 'ingest')`,
      `SELECT veil.attach('customers', 'city', 'Customer', 'name')`,
    ]) {
      const r = await attempt(statement, role.nobody);
      expect(r.code, statement).not.toBe(0);
      expect(r.stderr, statement).toMatch(/ERROR: {2}42501: permission denied/);
      expect(r.stdout + r.stderr).not.toContain(secret);
    }
    // the secret is in no function's source, and the superuser sees it where it lives
    expect(await on(`SELECT count(*) FROM pg_proc WHERE strpos(prosrc, (SELECT client_secret FROM veil.settings)) > 0`)).toEqual(['0']);
    expect(await on('SELECT client_secret FROM veil.settings')).toEqual([secret]);
    // a reader may not protect (test/security/db/db-oracle.test.ts has the rest)
    expect((await attempt(`SELECT veil.protect('Customer', 'email', 'x@example.com')`, role.nobody)).stderr).toMatch(
      /ERROR: {2}42501: permission denied for function protect/,
    );
  });

  it('fails closed when veil is stopped: the statement errors, the transaction aborts, and the cleartext is in neither the table, its heap file nor the WAL', async () => {
    const marker = `cleartext-${randomBytes(8).toString('hex')}@example.com`;
    const control = `control-${randomBytes(8).toString('hex')}`;
    await on(`INSERT INTO control_plain VALUES ('${control}');`);
    await veil.stop();
    try {
      const r = await attempt(
        `BEGIN;
        INSERT INTO control_plain VALUES ('same-transaction');
        INSERT INTO customers (id, email, name) VALUES (4001, '${marker}', 'Never Stored');
        COMMIT;`,
        role.writer,
      );
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/ERROR: {2}58000: .*veil: DB_SERVICE_UNAVAILABLE/);
      expect(r.stderr).not.toContain(marker);
    } finally {
      await veil.start();
    }
    expect(await on(`SELECT count(*) FROM customers WHERE id = 4001; SELECT count(*) FROM control_plain WHERE v = 'same-transaction';`)).toEqual(['0', '0']);

    await on('CHECKPOINT;');
    const [dataDir, customersFile, controlFile] = await on(
      `SHOW data_directory; SELECT pg_relation_filepath('customers'); SELECT pg_relation_filepath('control_plain');`,
    );
    const contains = async (file: string, text: string) => (await readFile(join(dataDir!, file))).includes(Buffer.from(text));
    const walFiles = (await readdir(join(dataDir!, 'pg_wal'))).filter((f) => /^[0-9A-F]{24}$/.test(f)).map((f) => join('pg_wal', f));
    const inWal = async (text: string) => (await Promise.all(walFiles.map((f) => contains(f, text)))).some(Boolean);
    // the scan finds cleartext where it was written in clear...
    expect(await contains(controlFile!, control)).toBe(true);
    expect(await inWal(control)).toBe(true);
    // ...and finds neither the refused value nor any value the trigger protected
    for (const text of [marker, 'alice@example.com', 'alice@wonderland.example', 'Alice Liddell', 'carol@example.com', 'bulk7@example.com']) {
      expect(await contains(customersFile!, text), text).toBe(false);
      expect(await inWal(text), text).toBe(false);
    }

    // veil is back: the backend reconnects and writes protect again
    await on(`INSERT INTO customers (id, email) VALUES (4002, 'back@example.com');`, role.writer);
    expect((await on('SELECT email FROM customers WHERE id = 4002'))[0]).toMatch(PROTECTED);
  }, 60_000);
});

describe('examples/db-triggers (docs/database.md)', () => {
  const exampleDb = `veil_example_${tag}`;
  afterAll(async () => {
    await sql(`DROP DATABASE IF EXISTS ${exampleDb} WITH (FORCE);`).catch(() => undefined);
    for (const r of ['app_writer', 'support_agent', 'fraud_analyst', 'reporting']) await sql(`DROP ROLE IF EXISTS ${r};`).catch(() => undefined);
  });

  it('run.sh installs, configures, protects on insert and shows each role what it may see', async () => {
    await sql(`CREATE DATABASE ${exampleDb};`);
    const { stdout } = await run('sh', [join(ROOT, 'examples/db-triggers/run.sh')], {
      env: { ...process.env, PGDATABASE: exampleDb, PGUSER: 'postgres', VEIL_URL: veil.url, VEIL_DATA_DIR: veil.dataDir },
    });
    const section = (title: string) => stdout.split('== ').find((s) => s.startsWith(title)) ?? '';
    expect(section('the table customers holds')).toMatch(/\| 4111-11\d\d-\d{4}-1111 \|/);
    expect(section('the table customers holds')).not.toMatch(/alice@|Liddell|4111-1111-1111-1111/);
    expect(section('rows found by protected email')).toContain('Oxford');
    expect(section('fraud_analyst reads')).toMatch(/alice@example\.com \| Alice Liddell \| 4111-1111-1111-1111/);
    expect(section('support_agent reads')).toContain('alice@example.com');
    expect(section('support_agent reads')).not.toMatch(/Liddell|4111-1111-1111-1111/);
    expect(section('reporting reads')).not.toMatch(/alice@|Liddell|4111-1111-1111-1111/);
    expect(section('reporting reads')).toContain('Oxford');
  }, 60_000);
});
