import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subjectsDb, type SubjectsDb } from '../../helpers/db-subjects.ts';

/**
 * Erasure by crypto-shredding on the database door (issue 29), against the real PostgreSQL 15 and
 * a real veil service: a table names its rows' data subject in a column (veil.attach_subject);
 * the trigger protects each row under its subject's key, the read view unprotects each row with
 * its subject; after one subject is erased (service.subjects.erase, what the admin API does),
 * that subject's values read as NULL with a SUBJECT_ERASED notice and the others read back;
 * veil db rewrap carries the erased values through unchanged and reports them.
 */
const PROTECTED = /^[A-Za-z0-9_-]{30,}$/;
const SUBJECTS = ['cust-0001', 'cust-0002', 'cust-0003'];
const row = (id: number, s: string) => `(${id}, '${s}', 'mail-${id}@example.org', 'Name ${id}', 'City ${id}')`;

// failing administration statements as the superuser: kept out of the server log, which
// test/security/db/db-server-log.test.ts scans for statements while other tests run
const QUIET = 'SET log_min_error_statement = panic; ';

let t: SubjectsDb<'writer' | 'reader'>;

beforeAll(async () => {
  t = await subjectsDb('subjects', ['writer', 'reader']);
  await t.on(`
    CREATE TABLE people (id int PRIMARY KEY, subject text, email text, name text, city text);
    SELECT veil.attach('people', 'email', 'Person', 'email');
    SELECT veil.attach('people', 'name', 'Person', 'name');
    SELECT veil.attach('people', 'city', 'Person', 'city');
    SELECT veil.attach_subject('people', 'subject');
    SELECT veil.grant_writer('${t.role.writer}', 'people');
    GRANT SELECT ON people TO ${t.role.writer};
    SELECT veil.create_read_view('people', 'people_clear');
    SELECT veil.grant_reader('${t.role.reader}', 'desk', 'people', 'people_clear');`);
  // two rows per subject, in one statement
  await t.on(`INSERT INTO people VALUES ${[1, 2, 3, 4, 5, 6].map((id) => row(id, SUBJECTS[(id - 1) % 3]!)).join(', ')};`, t.role.writer);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

const clear = (where = 'true') =>
  t.on(`SELECT id, subject, coalesce(email, '<null>'), coalesce(name, '<null>'), city FROM people_clear WHERE ${where} ORDER BY id`, t.role.reader);
const expected = (id: number) => `${id}|${SUBJECTS[(id - 1) % 3]}|mail-${id}@example.org|Name ${id}|City ${id}`;

describe("a table naming its rows' data subject", () => {
  it('keeps the subject column apart from the protected columns, and refuses to protect it or to name a protected one', async () => {
    expect(await t.on(`SELECT veil.subject_column('people'); SELECT count(*) FROM veil.mapped_columns('people');`)).toEqual(['subject', '3']);
    const protect = await t.attempt(`${QUIET}SELECT veil.attach('people', 'subject', 'Person', 'email')`);
    expect(protect.stderr).toMatch(/ERROR: {2}22023: .*veil: the column names the rows' data subject/);
    const protectedOne = await t.attempt(`${QUIET}SELECT veil.attach_subject('people', 'email')`);
    expect(protectedOne.stderr).toMatch(/ERROR: {2}22023: .*veil: the column is protected/);
    const json = await t.attempt(`${QUIET}ALTER TABLE people ADD COLUMN extra jsonb; SELECT veil.attach_subject('people', 'extra')`);
    expect(json.stderr).toMatch(/ERROR: {2}42804: .*veil: a subject column must be text, varchar, uuid or an integer/);
    // attaching a column again keeps the subject column; detaching the subject keeps the columns
    expect(
      await t.on(`BEGIN; SELECT veil.attach('people', 'city', 'Person', 'city'); SELECT veil.subject_column('people');
      SELECT veil.detach_subject('people'); SELECT coalesce(veil.subject_column('people'), '<none>'); SELECT count(*) FROM veil.mapped_columns('people'); ROLLBACK;`),
    ).toEqual(['subject', '<none>', '3']);
  });

  it("protects each row under its subject's key: stored values are protected, read back per subject, and equal emails differ across subjects", async () => {
    const stored = (await t.on('SELECT subject, email, name, city FROM people ORDER BY id')).map((l) => l.split('|'));
    for (const [subject, ...values] of stored) {
      expect(SUBJECTS).toContain(subject);
      for (const v of values) expect(v).toMatch(PROTECTED);
    }
    expect(await clear()).toEqual([1, 2, 3, 4, 5, 6].map(expected));
    await t.on(`INSERT INTO people VALUES (7, 'cust-0001', 'same@example.org', NULL, NULL), (8, 'cust-0002', 'same@example.org', NULL, NULL);`, t.role.writer);
    const [a, b] = await t.on('SELECT email FROM people WHERE id IN (7, 8) ORDER BY id');
    expect(a).not.toBe(b);
    // the subject-taking functions protect as the trigger did (AES-SIV is deterministic within a subject)
    expect(await t.on(`SELECT email = veil.protect('Person', 'email', 'same@example.org', 'cust-0001') FROM people WHERE id = 7`)).toEqual(['t']);
    expect(
      await t.on(
        `SELECT veil.unprotect_many('Person', 'email', array_agg(email ORDER BY id), array_agg(subject ORDER BY id)) FROM people WHERE id IN (1, 2, 7, 8)`,
        t.role.reader,
      ),
    ).toEqual(['{mail-1@example.org,mail-2@example.org,same@example.org,same@example.org}']);
    // another subject's key does not open the value
    const wrong = await t.attempt(`SELECT veil.unprotect('Person', 'email', email, 'cust-0002') FROM people WHERE id = 1`, t.role.reader);
    expect(wrong.stderr).toMatch(/ERROR: {2}22023: .*veil: PROTECTED_VALUE_INVALID/);
  });

  it('refuses a row whose subject is NULL (SUBJECT_REQUIRED), and writes nothing of its statement', async () => {
    const r = await t.attempt(`INSERT INTO people VALUES ${row(20, 'cust-0003')}, (21, NULL, 'nobody@example.org', NULL, NULL);`, t.role.writer);
    expect(r.stderr).toMatch(/ERROR: {2}22023: .*veil: SUBJECT_REQUIRED: .*\(Person\.email\)/);
    expect(r.stderr).not.toContain('nobody@example.org');
    expect(await t.on('SELECT count(*) FROM people WHERE id IN (20, 21)')).toEqual(['0']);
    // a row without values to protect needs no subject
    await t.on(`INSERT INTO people (id) VALUES (22);`, t.role.writer);
  });

  it('refuses rows of a table whose fields are subject-scoped but which names no subject column, loudly', async () => {
    await t.on(`CREATE TABLE anonymous (id int PRIMARY KEY, email text);
      SELECT veil.attach('anonymous', 'email', 'Person', 'email');
      SELECT veil.grant_writer('${t.role.writer}', 'anonymous');`);
    const r = await t.attempt(`INSERT INTO anonymous VALUES (1, 'shared@example.org');`, t.role.writer);
    expect(r.stderr).toMatch(/ERROR: {2}22023: .*veil: SUBJECT_REQUIRED: .*\(Person\.email\)/);
    expect(await t.on('SELECT count(*) FROM anonymous')).toEqual(['0']);
  });

  it('an integer or uuid subject column names the same subject in the trigger and in the read view', async () => {
    await t.on(`CREATE TABLE accounts (id int PRIMARY KEY, owner bigint, tenant uuid, email text);
      SELECT veil.attach('accounts', 'email', 'Person', 'email');
      SELECT veil.attach_subject('accounts', 'owner');
      SELECT veil.grant_writer('${t.role.writer}', 'accounts');
      SELECT veil.create_read_view('accounts', 'accounts_by_owner');
      GRANT SELECT ON accounts, accounts_by_owner TO ${t.role.reader};
      INSERT INTO accounts VALUES (1, 9000000001, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'owner@example.org');`);
    expect(await t.on('SELECT email FROM accounts_by_owner', t.role.reader)).toEqual(['owner@example.org']);
    expect(await t.on(`SELECT email = veil.protect('Person', 'email', 'owner@example.org', '9000000001') FROM accounts`)).toEqual(['t']);
    await t.on(`UPDATE accounts SET email = NULL; SELECT veil.attach_subject('accounts', 'tenant');
      UPDATE accounts SET email = 'tenant@example.org'; SELECT veil.create_read_view('accounts', 'accounts_by_tenant');
      GRANT SELECT ON accounts_by_tenant TO ${t.role.reader};`);
    expect(await t.on('SELECT email FROM accounts_by_tenant', t.role.reader)).toEqual(['tenant@example.org']);
    expect(await t.on(`SELECT email = veil.protect('Person', 'email', 'tenant@example.org', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11') FROM accounts`)).toEqual([
      't',
    ]);
  });

  it('refuses to move a row to another subject while a protected value stays under the former one; writing it anew moves it', async () => {
    const kept = await t.attempt(`UPDATE people SET subject = 'cust-0002' WHERE id = 7;`, t.role.writer);
    expect(kept.stderr).toMatch(/ERROR: {2}22023: .*veil: DB_ARGUMENT_INVALID: the row's subject changed .*\(Person\.email\)/);
    await t.on(`UPDATE people SET subject = 'cust-0002', email = 'moved@example.org' WHERE id = 7;`, t.role.writer);
    expect(await clear('id = 7')).toEqual(['7|cust-0002|moved@example.org|<null>|']);
    // an upsert protects once, under the row's subject
    await t.on(
      `INSERT INTO people VALUES (8, 'cust-0002', 'upsert@example.org', 'Up Sert', NULL)
      ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, name = EXCLUDED.name;`,
      t.role.writer,
    );
    expect(await clear('id = 8')).toEqual(['8|cust-0002|upsert@example.org|Up Sert|']);
  });
});

describe('after a subject is erased', () => {
  let before: string[];

  beforeAll(async () => {
    before = await t.on('SELECT id, email, name, city FROM people ORDER BY id');
    await t.service.subjects.erase('cust-0002', { by: 'test', reason: 'Art. 17 request' });
  });

  it("the read view answers SUBJECT_ERASED for that subject's values only: NULL and a notice; shared-key values and other subjects read back", async () => {
    const r = await t.attempt(
      `SELECT id, subject, coalesce(email, '<null>'), coalesce(name, '<null>'), city FROM people_clear WHERE id <= 6 ORDER BY id`,
      t.role.reader,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual(
      [1, 2, 3, 4, 5, 6].map((id) => ((id - 1) % 3 === 1 ? `${id}|cust-0002|<null>|<null>|City ${id}` : expected(id))),
    );
    // one notice for the statement, naming the code and a field, never a value or the subject
    expect(r.stderr.match(/NOTICE: {2}00000: veil: SUBJECT_ERASED: values of erased data subjects read as NULL \(Person\.\w+\)/g)).toHaveLength(1);
    expect(r.stderr).not.toContain('cust-0002');
    // the table still holds what it held: nothing was rewritten
    expect(await t.on('SELECT id, email, name, city FROM people ORDER BY id')).toEqual(before);
  });

  it("veil.unprotect of an erased subject's value raises SUBJECT_ERASED (22023), as for any value it cannot unprotect", async () => {
    const r = await t.attempt(`SELECT veil.unprotect('Person', 'email', email, subject) FROM people WHERE id = 2`, t.role.reader);
    expect(r.stderr).toMatch(/ERROR: {2}22023: .*veil: SUBJECT_ERASED: .*\(Person\.email\)/);
    expect(r.stderr).not.toContain('cust-0002');
  });

  it("a set-based unprotect over several subjects names the erased subject's value by its place in the call", async () => {
    const r = await t.attempt(
      `SELECT veil.unprotect_many('Person', 'name', array_agg(name ORDER BY id), array_agg(subject ORDER BY id)) FROM people WHERE id IN (1, 2, 3)`,
      t.role.reader,
    );
    // the call holds one request per subject: cust-0002's value is the first of the second
    expect(r.stderr).toMatch(
      /ERROR: {2}22023: .*veil: SUBJECT_ERASED: .*\(Person\.name\)\nDETAIL: {2}veil code SUBJECT_ERASED, status 422, retriable no, pointer \/requests\/1\/instances\/0\/value/,
    );
    expect(
      await t.on(
        `SELECT veil.unprotect_many('Person', 'name', array_agg(name ORDER BY id), array_agg(subject ORDER BY id)) FROM people WHERE id IN (1, 3, 4)`,
        t.role.reader,
      ),
    ).toEqual(['{"Name 1","Name 3","Name 4"}']);
  });

  it('a returning person is protected under a new key; the erased values stay erased', async () => {
    await t.on(`INSERT INTO people VALUES (30, 'cust-0002', 'back@example.org', 'Back Again', NULL);`, t.role.writer);
    expect(await clear('id IN (2, 30)')).toEqual(['2|cust-0002|<null>|<null>|City 2', '30|cust-0002|back@example.org|Back Again|']);
  });

  it('veil db rewrap carries the erased values through unchanged and reports them; the others are rewrapped and read back', async () => {
    expect((await t.cli('keys', 'rotate', '--id', 'shared-gcm')).code).toBe(0);
    // cust-0002's values before its erasure: rows 2, 5 and 8 (email, name) and 7 (email)
    const erasedBefore = await t.on(`SELECT id, email, name FROM people WHERE id IN (2, 5, 7, 8) ORDER BY id`);
    const run = await t.cli('db', 'rewrap', '--table', 'public.people', '--key-column', 'id', '--role', 'desk');
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.stdout).toMatch(/erased subjects' values kept 7/);
    expect(run.stdout).toContain('values of erased data subjects, kept as stored (unreadable for good): 7');
    expect(run.stdout + run.stderr).not.toContain('cust-0002');
    expect(await t.on(`SELECT id, email, name FROM people WHERE id IN (2, 5, 7, 8) ORDER BY id`)).toEqual(erasedBefore);
    // the shared-key city of an erased row moved to the new key version like every other
    const cityOf = (lines: string[], id: number) => lines.find((l) => l.startsWith(`${id}|`))!.split('|')[3];
    const after = await t.on('SELECT id, email, name, city FROM people ORDER BY id');
    expect(cityOf(after, 2)).not.toBe(cityOf(before, 2));
    expect(await clear('id = 30')).toEqual(['30|cust-0002|back@example.org|Back Again|']);
    // subject-scoped fields without a subject column: refused before anything is read
    const anonymous = await t.cli('db', 'rewrap', '--table', 'public.anonymous', '--key-column', 'id', '--role', 'desk');
    expect(anonymous.code).toBe(1);
    expect(anonymous.stderr).toContain("name the column holding each row's subject (veil.attach_subject, or --subject-column)");
    expect(await clear('id <= 6')).toEqual([1, 2, 3, 4, 5, 6].map((id) => ((id - 1) % 3 === 1 ? `${id}|cust-0002|<null>|<null>|City ${id}` : expected(id))));
  }, 60_000);
});
