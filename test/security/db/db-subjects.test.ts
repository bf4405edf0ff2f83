import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { marker } from '../../helpers/db-security.ts';
import { subjectsDb, type SubjectsDb } from '../../helpers/db-subjects.ts';

/**
 * The database door's data subjects (issue 29) over veil's local socket, and the subject id kept
 * out of every record: rows of several subjects in one statement protected each under its own
 * key (one PROTECT_SUBJECTS frame per row, one per set-based call however many subjects it holds),
 * a NULL subject and an id that is no subject id refused without writing anything, erasure read
 * as NULL — and no subject id in any error, notice, PostgreSQL's server log, the database's audit
 * log, veil's audit records or veil's log. Real PostgreSQL 15, a real veil service in this process.
 */
let t: SubjectsDb<'writer' | 'reader' | 'lookup'>;
const ids = [marker('subj-ann'), marker('subj-bob'), marker('subj-cy')];
const BAD_ID = `${marker('subj-bad')}\u0001`;
const texts: string[] = [];

async function attempt(script: string, user: string) {
  const r = await t.attempt(script, user);
  texts.push(r.stdout, r.stderr);
  return r;
}

async function serverLog(): Promise<string> {
  const [dataDir, collector] = await t.on('SHOW data_directory; SHOW logging_collector');
  if (collector === 'on') return readFile(join(dataDir!, (await t.on('SELECT pg_current_logfile()'))[0]!), 'utf8');
  return readFile(process.env.VEIL_PG_LOG ?? join(dirname(dataDir!), 'server.log'), 'utf8');
}

beforeAll(async () => {
  t = await subjectsDb('subjsock', ['writer', 'reader', 'lookup'], { socket: true });
  await t.on(`
    CREATE TABLE people (id int PRIMARY KEY, subject text, email text, name text);
    SELECT veil.attach('people', 'email', 'Person', 'email');
    SELECT veil.attach('people', 'name', 'Person', 'name');
    SELECT veil.attach_subject('people', 'subject');
    SELECT veil.grant_writer('${t.role.writer}', 'people');
    SELECT veil.create_read_view('people', 'people_clear');
    SELECT veil.grant_reader('${t.role.reader}', 'desk', 'people', 'people_clear');
    SELECT veil.grant_lookup('${t.role.lookup}');`);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe('data subjects over the database socket', () => {
  it("protects rows of several subjects in one statement, one frame per row, each under its subject's key", async () => {
    const rows = [1, 2, 3, 4, 5, 6].map((i) => `(${i}, '${ids[(i - 1) % 3]}', 'mail-${i}@example.org', 'Name ${i}')`);
    const r = await attempt(`INSERT INTO people VALUES ${rows.join(', ')}; SELECT veil.session_stats();`, t.role.writer);
    expect(r.code, r.stderr).toBe(0);
    // one socket connection and one HTTP connection (the token); the token request, AUTH, then one frame per row
    expect(JSON.parse(r.stdout.trim())).toEqual({ connects: 2, tokens: 1, requests: 8, transforms: 6 });
    const view = await attempt('SELECT id, email, name FROM people_clear ORDER BY id', t.role.reader);
    expect(view.stdout.trim().split('\n')).toEqual([1, 2, 3, 4, 5, 6].map((i) => `${i}|mail-${i}@example.org|Name ${i}`));
  });

  it('a set-based call over several subjects is one frame, grouped by subject: as the trigger protects', async () => {
    const r = await attempt(
      `SELECT veil.protect_many('Person', 'email', ARRAY['mail-1@example.org', 'mail-2@example.org', 'mail-4@example.org'],
        ARRAY['${ids[0]}', '${ids[1]}', '${ids[0]}']);
      SELECT veil.session_stats()->>'transforms';`,
      t.role.lookup,
    );
    expect(r.code, r.stderr).toBe(0);
    const [protectedArray, transforms] = r.stdout.trim().split('\n');
    expect(transforms).toBe('1');
    expect(await t.on(`SELECT '${protectedArray}'::text[] = ARRAY(SELECT email FROM people WHERE id IN (1, 2, 4) ORDER BY id)`)).toEqual(['t']);
  });

  it('refuses a NULL subject and an id that is no subject id, writing nothing and echoing neither', async () => {
    const none = await attempt(`INSERT INTO people VALUES (10, NULL, 'nobody@example.org', NULL);`, t.role.writer);
    expect(none.stderr).toMatch(/ERROR: {2}22023: .*veil: SUBJECT_REQUIRED/);
    const bad = await attempt(`INSERT INTO people VALUES (11, E'${BAD_ID.replace('\u0001', '\\x01')}', 'bad@example.org', NULL);`, t.role.writer);
    expect(bad.stderr).toMatch(/ERROR: {2}22023: .*veil: SUBJECT_ID_INVALID/);
    expect(await t.on('SELECT count(*) FROM people WHERE id IN (10, 11)')).toEqual(['0']);
  });

  it("after an erasure the subject's values read as NULL with a notice, the others read back", async () => {
    await t.service.subjects.erase(ids[1]!, { by: 'test', reason: 'Art. 17 request' });
    const view = await attempt(`SELECT id, coalesce(email, '<null>'), coalesce(name, '<null>') FROM people_clear ORDER BY id`, t.role.reader);
    expect(view.stdout.trim().split('\n')).toEqual(
      [1, 2, 3, 4, 5, 6].map((i) => ((i - 1) % 3 === 1 ? `${i}|<null>|<null>` : `${i}|mail-${i}@example.org|Name ${i}`)),
    );
    expect(view.stderr).toMatch(/NOTICE: {2}00000: veil: SUBJECT_ERASED/);
    const direct = await attempt(
      `SELECT veil.unprotect_many('Person', 'name', array_agg(name), array_agg(subject)) FROM people WHERE id IN (2, 5)`,
      t.role.reader,
    );
    expect(direct.stderr).toMatch(/ERROR: {2}22023: .*veil: SUBJECT_ERASED/);
  });

  it("no subject id in any error or notice, the server log, the database's audit log, veil's audit records or veil's log", async () => {
    const audit = await t.on('SELECT r::text FROM veil.audit_log(100000) r');
    expect(audit.some((l) => /"code": ?"SUBJECT_ERASED"/.test(l))).toBe(true);
    expect(t.audit.events.some((e) => e.code === 'SUBJECT_ERASED')).toBe(true);
    const log = await serverLog();
    for (const text of [...texts, log, audit.join('\n'), JSON.stringify(t.audit.events), t.logs.join('')]) {
      for (const id of [...ids, BAD_ID.slice(0, -1)]) expect(text).not.toContain(id);
    }
  });
});
