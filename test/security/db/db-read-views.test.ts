import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { veilDb, type VeilDb } from '../../helpers/db-security.ts';

/**
 * Attack: veil.create_read_view made an ordinary view, owned by the installer, so a reader read
 * the table through it with the installer's privileges: the table's row-level security policies
 * and column privileges did not hold. Real PostgreSQL 15, real `veil serve`.
 */
let t: VeilDb<'alice' | 'bob' | 'narrow' | 'viewonly'>;

beforeAll(async () => {
  t = await veilDb('views', ['alice', 'bob', 'narrow', 'viewonly']);
  const { alice, bob, narrow, viewonly } = t.role;
  await t.on(`
    CREATE TABLE accounts (id int PRIMARY KEY, owner name NOT NULL, email text, name text, city text);
    SELECT veil.attach('accounts', 'email', 'Customer', 'email');
    SELECT veil.attach('accounts', 'name', 'Customer', 'name');
    INSERT INTO accounts VALUES
      (1, '${alice}', 'alice1@example.com', 'Alice One', 'Oxford'),
      (2, '${alice}', 'alice2@example.com', 'Alice Two', 'Leeds'),
      (3, '${bob}', 'bob@example.com', 'Bob', 'Rome'),
      (4, 'nobody', 'carol@example.com', 'Carol', 'Lyon');
    ALTER TABLE accounts ENABLE ROW LEVEL SECURITY;
    CREATE POLICY own_rows ON accounts FOR SELECT USING (owner = current_user);
    -- an older view of the same name, as the previous veil made it (no security_invoker)
    CREATE VIEW accounts_clear AS SELECT * FROM accounts;
    SELECT veil.create_read_view('accounts', 'accounts_clear');
    SELECT veil.grant_reader('${alice}', 'fraud', 'accounts', 'accounts_clear');
    SELECT veil.grant_reader('${bob}', 'fraud', 'accounts', 'accounts_clear');
    -- narrow may read id and city of the table only, viewonly the view only
    SELECT veil.grant_reader('${narrow}', 'fraud', NULL, 'accounts_clear');
    GRANT SELECT (id, owner, city) ON accounts TO ${narrow};
    SELECT veil.grant_reader('${viewonly}', 'fraud', NULL, 'accounts_clear');
    CREATE POLICY narrow_rows ON accounts FOR SELECT TO ${narrow} USING (true);`);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe("read views honour the table's row-level security and column privileges", () => {
  it("the view runs with the reader's privileges (security_invoker), also when it replaced an older view", async () => {
    expect(await t.on(`SELECT reloptions::text FROM pg_class WHERE oid = 'accounts_clear'::regclass`)).toEqual(['{security_invoker=true}']);
  });

  it('each reader sees exactly the rows its policy allows, in clear', async () => {
    expect(await t.on('SELECT id, email, name, city FROM accounts_clear ORDER BY id', t.role.alice)).toEqual([
      '1|alice1@example.com|Alice One|Oxford',
      '2|alice2@example.com|Alice Two|Leeds',
    ]);
    expect(await t.on('SELECT id, email, name, city FROM accounts_clear ORDER BY id', t.role.bob)).toEqual(['3|bob@example.com|Bob|Rome']);
    // a filter on the view cannot reach past the policy either
    expect(await t.on(`SELECT count(*) FROM accounts_clear WHERE email = 'carol@example.com' OR id = 4`, t.role.alice)).toEqual(['0']);
    // veil was asked only about alice's two rows: once per row for the first query, once per row
    // for the filter (the policy is applied before it); never about carol's or bob's
    const calls = await t.audit(t.role.alice);
    expect(calls.map((c) => [c.function, c.instances, c.outcome])).toEqual(Array.from({ length: 4 }, () => ['veil.reveal', 2, 'ok']));
  });

  it('column privileges hold: a reader without SELECT on the protected columns reads none of them through the view', async () => {
    for (const query of ['SELECT email FROM accounts_clear', 'SELECT * FROM accounts_clear', 'SELECT id, city FROM accounts_clear']) {
      const r = await t.attempt(query, t.role.narrow);
      expect(r.code, query).not.toBe(0);
      expect(r.stderr, query).toMatch(/ERROR: {2}42501: permission denied for table accounts/);
      expect(r.stdout + r.stderr).not.toMatch(/@example\.com|Alice|Carol/);
    }
    // what it was granted on the table still works
    expect(await t.on('SELECT id, city FROM accounts ORDER BY id', t.role.narrow)).toEqual(['1|Oxford', '2|Leeds', '3|Rome', '4|Lyon']);
    expect(await t.audit(t.role.narrow)).toEqual([]);
  });

  it('a role granted only the view, not the table, reads nothing', async () => {
    const r = await t.attempt('SELECT * FROM accounts_clear', t.role.viewonly);
    expect(r.stderr).toMatch(/ERROR: {2}42501: permission denied for table accounts/);
    expect(await t.audit(t.role.viewonly)).toEqual([]);
  });
});
