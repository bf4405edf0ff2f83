import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngine } from '../../../src/app/open-engine.ts';
import { EXAMPLE_CONFIG } from '../../../src/env/index.ts';
import { marker, veilDb, type VeilDb } from '../../helpers/db-security.ts';
import { databaseUrl } from '../../helpers/postgres.ts';

/**
 * Attack: `veil db rewrap` writes re-protected values past veil's trigger (which would protect
 * them again) with `SET LOCAL session_replication_role = replica` in each batch's transaction.
 * That switch must be the rewrap's alone: a writer role (grant-writer) cannot set it in any way
 * PostgreSQL offers — SET, SET LOCAL, set_config, its own ALTER ROLE … SET, the connection's
 * startup options — nor disable the trigger, nor run the rewrap, nor reach the rewrap's
 * checkpoints; a writer's statements during a rewrap are protected as always. And the rewrap
 * never lets a value be protected twice: with veil's trigger ENABLE ALWAYS it refuses to start,
 * and a batch whose stored values differ from what it wrote (another trigger rewrote them) is
 * rolled back. Real PostgreSQL 15, real `veil serve`.
 */
let t: VeilDb<'writer' | 'rewrapper'>;
const PROTECTED = /^[A-Za-z0-9_-]{30,}$/;
const DENIED = /42501: permission denied to set parameter "session_replication_role"/;
const versionOf = (value: string) => Buffer.from(value, 'base64url').readUInt32BE(1);
const stored = () => t.on('SELECT id, email, note FROM accounts ORDER BY id');

async function unprotectEmails(values: string[]): Promise<unknown[]> {
  const { engine } = await openEngine({ configFile: EXAMPLE_CONFIG, dataDir: t.veil.dataDir, env: {}, now: () => new Date(), provision: false });
  const [email] = engine.bind({
    identity: { roles: ['fraud'] },
    rightsEvidences: [{ name: 'Role', value: 'fraud' }],
    processingEvidences: [{ name: 'Action', value: 'Unprotect' }],
    fields: [{ className: 'Customer', propertyName: 'email' }],
  }).transforms;
  return email!.many(values);
}

const rewrap = (user: string, ...extra: string[]) =>
  t.cli(
    'db',
    'rewrap',
    '--table',
    'accounts',
    '--key-column',
    'id',
    '--role',
    'fraud',
    '--data-dir',
    t.veil.dataDir,
    '--database-url',
    databaseUrl(t.db, user),
    ...extra,
  );

beforeAll(async () => {
  t = await veilDb('rwbypass', ['writer', 'rewrapper']);
  await t.on(`
    CREATE TABLE accounts (id int PRIMARY KEY, email text, note text);
    SELECT veil.attach('accounts', 'email', 'Customer', 'email');
    SELECT veil.grant_writer('${t.role.writer}', 'accounts');`);
  await t.on(`INSERT INTO accounts VALUES (1, 'one@example.com', 'a'), (2, 'two@example.com', 'b'), (3, NULL, 'c');`, t.role.writer);
  const rotated = await t.cli('keys', 'rotate', '--id', 'customer-siv', '--data-dir', t.veil.dataDir);
  expect(rotated.code, rotated.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe("the rewrap's trigger bypass is not a writer's", () => {
  it('a writer cannot set session_replication_role by SET, SET LOCAL, set_config, ALTER ROLE or startup options, nor disable the trigger', async () => {
    const cleartext = marker('bypass');
    for (const attempt of [
      'SET session_replication_role = replica;',
      `BEGIN; SET LOCAL session_replication_role = replica; INSERT INTO accounts VALUES (10, '${cleartext}', 'x'); COMMIT;`,
      `SELECT set_config('session_replication_role', 'replica', true); INSERT INTO accounts VALUES (11, '${cleartext}', 'x');`,
      `ALTER ROLE ${t.role.writer} SET session_replication_role = replica;`,
      `ALTER ROLE ${t.role.writer} IN DATABASE ${t.db} SET session_replication_role = replica;`,
    ]) {
      const run = await t.attempt(attempt, t.role.writer);
      expect(run.code, attempt).not.toBe(0);
      expect(run.stderr, attempt).toMatch(DENIED);
    }
    const startup = new pg.Client({ connectionString: databaseUrl(t.db, t.role.writer), options: '-c session_replication_role=replica' });
    const refused = await startup.connect().then(
      () => undefined,
      (e: { code?: string; message?: string }) => e,
    );
    await startup.end().catch(() => undefined);
    expect(refused?.code).toBe('42501');
    expect(refused?.message).toMatch(/session_replication_role/);
    for (const attempt of [
      'ALTER TABLE accounts DISABLE TRIGGER zz_veil_protect;',
      'ALTER TABLE accounts DISABLE TRIGGER ALL;',
      'DROP TRIGGER zz_veil_protect ON accounts;',
    ]) {
      const run = await t.attempt(attempt, t.role.writer);
      expect(run.code, attempt).not.toBe(0);
      expect(run.stderr, attempt).toMatch(/42501: must be owner of (table|relation) accounts/);
    }
    // after all of it the trigger still protects what the writer writes
    await t.on(`INSERT INTO accounts VALUES (12, '${cleartext}', 'x');`, t.role.writer);
    const [email] = await t.on('SELECT email FROM accounts WHERE id = 12');
    expect(email).toMatch(PROTECTED);
    expect(await unprotectEmails([email!])).toEqual([cleartext]);
    expect(await t.on('SELECT count(*) FROM accounts WHERE id IN (10, 11)')).toEqual(['0']);
    await t.on('DELETE FROM accounts WHERE id = 12');
  });

  it('veil db rewrap as a writer is refused before anything is written', async () => {
    const before = await stored();
    const run = await rewrap(t.role.writer);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('may not set session_replication_role');
    expect(await stored()).toEqual(before);
    expect(await t.on(`SELECT pg_catalog.to_regclass('veil_rewrap.progress') IS NULL`)).toEqual(['t']);
  });

  it("a role granted SET on the parameter rewraps; a writer's INSERT meanwhile is protected; the checkpoints are not the writer's", async () => {
    await t.on(`GRANT SET ON PARAMETER session_replication_role TO ${t.role.rewrapper};
      GRANT SELECT, UPDATE ON accounts TO ${t.role.rewrapper};
      GRANT CREATE ON DATABASE ${t.db} TO ${t.role.rewrapper};`);
    const run = await rewrap(t.role.rewrapper);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('values rewrapped 2, unchanged 0, refused 0, NULL 1, rows updated 2, batches 1');
    const emails = await t.on('SELECT email FROM accounts WHERE email IS NOT NULL ORDER BY id');
    expect(emails.map(versionOf)).toEqual([2, 2]);
    expect(await unprotectEmails(emails)).toEqual(['one@example.com', 'two@example.com']);

    // the switch is one transaction's: a writer's INSERT while it is on is protected
    const held = new pg.Client({ connectionString: databaseUrl(t.db, t.role.rewrapper) });
    await held.connect();
    try {
      await held.query('BEGIN');
      await held.query('SET LOCAL session_replication_role = replica');
      const cleartext = marker('during');
      await t.on(`INSERT INTO accounts VALUES (20, '${cleartext}', 'x');`, t.role.writer);
      const [email] = await t.on('SELECT email FROM accounts WHERE id = 20');
      expect(email).toMatch(PROTECTED);
      expect(await unprotectEmails([email!])).toEqual([cleartext]);
      await held.query('ROLLBACK');
    } finally {
      await held.end();
    }
    await t.on('DELETE FROM accounts WHERE id = 20');

    // the progress a rewrap resumes from is out of a writer's reach (it could make a run skip rows)
    for (const attempt of ['SELECT * FROM veil_rewrap.progress;', `UPDATE veil_rewrap.progress SET last_key = '999';`, 'DELETE FROM veil_rewrap.refused;']) {
      const denied = await t.attempt(attempt, t.role.writer);
      expect(denied.code, attempt).not.toBe(0);
      expect(denied.stderr, attempt).toMatch(/42501: permission denied for schema veil_rewrap/);
    }
  });

  it("never protects twice: refuses veil's trigger ENABLE ALWAYS, and rolls back a batch another trigger rewrote", async () => {
    // a later rotation: the emails change again (version 3)
    expect((await t.cli('keys', 'rotate', '--id', 'customer-siv', '--data-dir', t.veil.dataDir)).code).toBe(0);
    const before = await stored();
    await t.on('ALTER TABLE accounts ENABLE ALWAYS TRIGGER zz_veil_protect;');
    const always = await rewrap('postgres', '--restart');
    expect(always.code).toBe(1);
    expect(always.stderr).toContain('enabled ALWAYS');
    await t.on('ALTER TABLE accounts ENABLE TRIGGER zz_veil_protect;');

    await t.on(`CREATE FUNCTION meddle() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.email := NEW.email || 'x'; RETURN NEW; END $$;
      CREATE TRIGGER aa_meddle BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION meddle();
      ALTER TABLE accounts ENABLE ALWAYS TRIGGER aa_meddle;`);
    const meddled = await rewrap('postgres', '--restart');
    expect(meddled.code).toBe(1);
    expect(meddled.stderr).toContain('2 of 2 rows were not stored as written');
    expect(await stored()).toEqual(before);
    await t.on('DROP TRIGGER aa_meddle ON accounts; DROP FUNCTION meddle();');
    // without it the run goes through, each value protected once, under version 3
    const clean = await rewrap('postgres');
    expect(clean.code, clean.stderr).toBe(0);
    expect(clean.stderr).toContain('resumed from the first row (no batch committed before)');
    expect(clean.stdout).toContain('values rewrapped 2, unchanged 0');
    const emails = await t.on('SELECT email FROM accounts WHERE email IS NOT NULL ORDER BY id');
    expect(emails.map(versionOf)).toEqual([3, 3]);
    expect(await unprotectEmails(emails)).toEqual(['one@example.com', 'two@example.com']);
  });
});
