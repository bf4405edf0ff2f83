import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { veilDb, type VeilDb } from '../../helpers/db-security.ts';

/**
 * Attack: every database login used veil.protect / protect_many (granted to PUBLIC, run with the
 * configured protect role, unaudited) as an oracle for deterministic fields. Real PostgreSQL 15 with
 * PL/Python, real `veil serve`, roles granted with the `veil db` commands.
 */
let t: VeilDb<'plain' | 'writer' | 'lookup' | 'reader' | 'member'>;
const PROTECTED = /^[A-Za-z0-9_-]{30,}$/;

beforeAll(async () => {
  t = await veilDb('oracle', ['plain', 'writer', 'lookup', 'reader', 'member']);
  await t.on(`
    CREATE TABLE customers (id int PRIMARY KEY, email text, name text);
    SELECT veil.attach('customers', 'email', 'Customer', 'email');
    SELECT veil.attach('customers', 'name', 'Customer', 'name');
    SELECT veil.create_read_view('customers', 'customers_clear');
    GRANT ${t.role.lookup} TO ${t.role.member};`);
  for (const args of [
    ['grant-writer', '--role', t.role.writer, '--table', 'customers', '--values-per-minute', '4'],
    ['grant-lookup', '--role', t.role.lookup, '--values-per-minute', '10'],
    ['grant-reader', '--role', t.role.reader, '--veil-role', 'fraud', '--table', 'customers', '--view', 'customers_clear'],
  ]) {
    const r = await t.cli('db', ...args);
    expect(r.code, r.stderr).toBe(0);
  }
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe('database oracle: protect and unprotect are granted, audited and rate-limited per role', () => {
  it("nothing in schema veil is PUBLIC's, even after reinstalling over an install that granted to PUBLIC", async () => {
    await t.on(
      `GRANT USAGE ON SCHEMA veil TO PUBLIC; GRANT EXECUTE ON FUNCTION veil.protect(text, text, text), veil.protect_many(text, text, text[]) TO PUBLIC;`,
    );
    expect((await t.cli('db', 'install', '--apply')).code).toBe(0);
    const publicGrants = `
      SELECT count(*) FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
      WHERE p.pronamespace = 'veil'::regnamespace AND a.grantee = 0;
      SELECT count(*) FROM pg_namespace n, aclexplode(n.nspacl) a WHERE n.nspname = 'veil' AND a.grantee = 0;`;
    expect(await t.on(publicGrants)).toEqual(['0', '0']);
  });

  it('a plain login cannot call any veil function; a writer and a reader cannot call protect', async () => {
    const calls = [
      `SELECT veil.protect('Customer', 'email', 'guess@example.com')`,
      `SELECT veil.protect_many('Customer', 'email', ARRAY['guess@example.com'])`,
      `SELECT veil.unprotect('Customer', 'email', 'x')`,
      `SELECT veil.unprotect_many('Customer', 'email', ARRAY['x'])`,
      `SELECT veil.reveal(ARRAY['Customer'], ARRAY['email'], ARRAY['x'])`,
    ];
    for (const call of calls) {
      const r = await t.attempt(call, t.role.plain);
      expect(r.code, call).not.toBe(0);
      expect(r.stderr, call).toMatch(/ERROR: {2}42501: permission denied for schema veil/);
    }
    for (const user of [t.role.writer, t.role.reader]) {
      for (const call of calls.slice(0, 2)) {
        const r = await t.attempt(call, user);
        expect(r.stderr, `${user}: ${call}`).toMatch(/ERROR: {2}42501: permission denied for function protect(_many)?\n/);
      }
    }
    // nothing reached veil: no audit record for any of them
    for (const user of [t.role.plain, t.role.writer, t.role.reader]) expect(await t.audit(user)).toEqual([]);
  });

  it('a lookup role is audited with its role name and refused past its budget, and a ROLLBACK gives neither back', async () => {
    // 10 values per minute: 6 single calls and a call of 4 values use it up, inside a transaction
    // that is then rolled back
    const spend = await t.attempt(
      `BEGIN;
      ${Array.from({ length: 6 }, (_, i) => `SELECT veil.protect('Customer', 'email', 'guess${i}@example.com');`).join('\n')}
      SELECT array_length(veil.protect_many('Customer', 'email', ARRAY['a@example.com', 'b@example.com', NULL, 'c@example.com', 'd@example.com']), 1);
      ROLLBACK;`,
      t.role.lookup,
    );
    expect(spend.code, spend.stderr).toBe(0);
    const lines = spend.stdout.trim().split('\n');
    expect(lines).toHaveLength(7);
    for (const l of lines.slice(0, 6)) expect(l).toMatch(PROTECTED);
    expect(lines[6]).toBe('5');

    const refused = await t.attempt(`SELECT veil.protect('Customer', 'email', 'guess-refused@example.com')`, t.role.lookup);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/ERROR: {2}58000: .*veil: DB_RATE_LIMITED: /);
    expect(refused.stderr).toContain('HINT:  this database role sends veil more values per minute');
    expect(refused.stderr).not.toContain('guess-refused');
    // a larger call is refused whole: nothing of it reaches veil
    const many = await t.attempt(`SELECT veil.protect_many('Customer', 'email', ARRAY['e@example.com', 'f@example.com'])`, t.role.lookup);
    expect(many.stderr).toMatch(/veil: DB_RATE_LIMITED/);

    const records = await t.audit(t.role.lookup);
    expect(records.map((r) => [r.function, r.action, r.instances, r.outcome, r.code ?? ''])).toEqual([
      ...Array.from({ length: 6 }, () => ['veil.protect', 'Protect', 1, 'ok', '']),
      ['veil.protect_many', 'Protect', 4, 'ok', ''],
      ['veil.protect', 'Protect', 1, 'refused', 'DB_RATE_LIMITED'],
      ['veil.protect_many', 'Protect', 2, 'refused', 'DB_RATE_LIMITED'],
    ]);
    expect(records[6]!.fields).toEqual([{ className: 'Customer', propertyName: 'email', count: 4 }]);
    // names and counts, never a value
    const log = (await t.on(`SELECT string_agg(r::text, E'\\n') FROM veil.audit_log(100000) r`)).join('\n');
    expect(log).not.toMatch(/guess|@example\.com/);
  });

  it('a login is audited and limited as itself when it borrows a granted role (session_user, not SET ROLE)', async () => {
    const r = await t.attempt(`SET ROLE ${t.role.lookup}; SELECT veil.protect('Customer', 'name', 'Member Guess');`, t.role.member);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(PROTECTED);
    const records = await t.audit(t.role.member);
    expect(records.map((x) => [x.dbRole, x.function, x.outcome])).toEqual([[t.role.member, 'veil.protect', 'ok']]);
  });

  it('writes through the trigger count too: audited with the writer and the table, refused past the budget, nothing stored', async () => {
    // 4 values per minute: two rows of two protected columns
    await t.on(`INSERT INTO customers VALUES (1, 'w1@example.com', 'W One'), (2, 'w2@example.com', 'W Two');`, t.role.writer);
    const refused = await t.attempt(`INSERT INTO customers VALUES (3, 'w3@example.com', 'W Three');`, t.role.writer);
    expect(refused.stderr).toMatch(/ERROR: {2}58000: .*veil: DB_RATE_LIMITED/);
    expect(refused.stderr).not.toMatch(/w3@|W Three/);
    expect(await t.on('SELECT id FROM customers ORDER BY id')).toEqual(['1', '2']);
    const records = await t.audit(t.role.writer);
    expect(records.map((r) => [r.function, r.table, r.instances, r.outcome, r.code ?? ''])).toEqual([
      ['trigger', 'public.customers', 2, 'ok', ''],
      ['trigger', 'public.customers', 2, 'ok', ''],
      ['trigger', 'public.customers', 2, 'refused', 'DB_RATE_LIMITED'],
    ]);
  });

  it("a reader's unprotects are audited with its role; veil db rate-limit and revoke take effect", async () => {
    expect(await t.on('SELECT email FROM customers_clear ORDER BY id', t.role.reader)).toEqual(['w1@example.com', 'w2@example.com']);
    const reads = await t.audit(t.role.reader);
    expect(reads.map((r) => [r.function, r.action, r.instances, r.outcome])).toEqual([
      ['veil.reveal', 'Unprotect', 2, 'ok'],
      ['veil.reveal', 'Unprotect', 2, 'ok'],
    ]);

    expect((await t.cli('db', 'rate-limit', '--role', t.role.reader, '--values-per-minute', '1')).code).toBe(0);
    const limited = await t.attempt('SELECT email FROM customers_clear WHERE id = 1', t.role.reader);
    expect(limited.stderr).toMatch(/veil: DB_RATE_LIMITED/);

    expect((await t.cli('db', 'revoke', '--role', t.role.reader, '--table', 'customers')).code).toBe(0);
    const revoked = await t.attempt(`SELECT veil.unprotect('Customer', 'email', email) FROM customers`, t.role.reader);
    expect(revoked.stderr).toMatch(/ERROR: {2}42501: permission denied for (table customers|schema veil)/);
    expect(
      await t.on(
        `SELECT count(*) FROM veil.role_map WHERE db_role = '${t.role.reader}'; SELECT count(*) FROM veil.rate_limits WHERE db_role = '${t.role.reader}'`,
      ),
    ).toEqual(['0', '0']);
  });

  it('veil db audit prints the records as JSON lines', async () => {
    const r = await t.cli('db', 'audit', '--records', '100000');
    expect(r.code, r.stderr).toBe(0);
    const mine = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { database: string; dbRole: string })
      .filter((x) => x.database === t.db);
    expect(mine.filter((x) => x.dbRole === t.role.lookup)).toHaveLength(9);
  });
});
