import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrl, sql } from '../../helpers/postgres.ts';
import { ROOT } from '../../helpers/processes.ts';

/**
 * `veil db check` (issue 28) as a real process against the real PostgreSQL 15 (the tests' global
 * setup starts it with scripts/pg-env.sh), on a database where `veil db install` put schema veil
 * and veil.attach attached columns. No veil service is needed: the rows are written before the
 * columns are attached (the attached ones hold protected-looking strings), and the check only
 * reads. Every sampled value is a distinctive marker, and none may appear in stdout or stderr.
 */
const tag = `${process.pid}_${randomBytes(3).toString('hex')}`;
const db = `veil_check_${tag}`;
const checker = `checker_${tag}`;
const mark = () => randomBytes(5).toString('hex');

const ROWS = 6;
const IBANS = ['DE89 3704 0044 0532 0130 00', 'GB82 WEST 1234 5698 7654 32', 'FR14 2004 1010 0505 0001 3M02 606'];
const backupEmails = Array.from({ length: ROWS }, () => `backup-${mark()}@example.com`);
const contactEmails = Array.from({ length: ROWS }, () => `contact-${mark()}@example.org`);
const notes = Array.from({ length: ROWS }, () => `note ${mark()}: leave the parcel at the back door`);
const fullNames = ['Ada Lovelace', 'Grace Hopper', 'Alan Turing', 'Edsger Dijkstra', 'Barbara Liskov', 'Donald Knuth'];
const auditEmails = Array.from({ length: ROWS }, () => `audit-${mark()}@example.net`);
const oddEmails = Array.from({ length: 3 }, () => `odd-${mark()}@example.com`);
const bigEmails: string[] = [];
const cleanCities = Array.from({ length: ROWS }, () => `city-${mark()}`);
/** every value a sample can read: none may be printed */
const sampled = () => [
  ...backupEmails,
  ...contactEmails,
  ...notes,
  ...fullNames,
  ...auditEmails,
  ...oddEmails,
  ...bigEmails,
  ...cleanCities,
  ...IBANS,
  ...IBANS.map((i) => i.replaceAll(' ', '')),
];

const lit = (s: string) => `'${s.replaceAll("'", "''")}'`;
const ident = (s: string) => `"${s.replaceAll('"', '""')}"`;

/** names an attacker might choose: quotes, a statement, a newline and a terminal escape */
const ODD_SCHEMA = 'Odd "sch".ema';
const ODD_TABLE = 'we"ird\'; DROP TABLE public.orders; --';
const ODD_ATTACHED = 'e"mail';
const ODD_INJECT = 'x\'); DROP TABLE "public"."orders"; --';
const ODD_NEWLINE = 'back\nup mail';
const ODD_ESCAPE = 'esc\u001b[2Jmail';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function check(args: string[], url = databaseUrl(db)): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      join(ROOT, 'bin/veil'),
      ['db', 'check', ...args],
      { env: { ...process.env, VEIL_PG_URL: url }, maxBuffer: 16 << 20, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

function noValueIn(run: Run): void {
  const text = run.stdout + run.stderr;
  const leaked = sampled().filter((v) => text.includes(v));
  expect(leaked, 'sampled values in the output').toEqual([]);
  // nor the distinctive part of a marker on its own
  expect(text).not.toMatch(/(backup|contact|audit|odd|big|city)-[0-9a-f]{10}/);
}

interface JsonFinding {
  schema: string;
  table: string;
  column: string;
  path: string;
  kind: string;
  matched: number;
  values: number;
  rowsSampled: number;
}
interface JsonReport {
  status: string;
  findings: JsonFinding[];
  tables: { schema: string; table: string; attached: string[]; checked: string[]; rowsSampled: number; method: string; unreadable: string[]; error?: string }[];
  unmatchedTables: string[];
}

beforeAll(async () => {
  await sql(`CREATE DATABASE ${db};\nCREATE ROLE ${checker} LOGIN;`);
  const install = await new Promise<Run>((resolve) => {
    execFile(join(ROOT, 'bin/veil'), ['db', 'install', '--apply', '--database-url', databaseUrl(db)], { env: { ...process.env } }, (error, stdout, stderr) =>
      resolve({ code: error ? 1 : 0, stdout, stderr }),
    );
  });
  expect(install.code, install.stderr).toBe(0);
  const orders = Array.from(
    { length: ROWS },
    (_, i) =>
      `(${i + 1}, ${lit(`protected-${i}`)}, ${lit(backupEmails[i]!)}, ` +
      `${lit(JSON.stringify({ contact: { email: contactEmails[i] }, items: [{ sku: `A-${i}`, qty: i + 1 }], gift: i % 2 === 0 }))}::jsonb, ` +
      `${lit(IBANS[i % IBANS.length]!)}, ${lit(notes[i]!)}, NULL, ${lit(fullNames[i]!)})`,
  );
  // the big table's backup_email was added late: only every fifth of its last 5,000 rows has one
  const bigHasEmail = (i: number) => i > 15_000 && i % 5 === 0;
  for (let i = 1; i <= 20_000; i++) if (bigHasEmail(i)) bigEmails.push(`big-${mark()}@example.com`);
  let b = 0;
  const bigValues = Array.from({ length: 20_000 }, (_, k) => `${k + 1}\tp-${k + 1}\t${bigHasEmail(k + 1) ? bigEmails[b++] : '\\N'}\t{"n": ${k + 1}}`);
  await sql(
    `
    CREATE TABLE orders (id int PRIMARY KEY, email text, backup_email text, details jsonb, iban varchar(40), notes text, empty_email text, full_name text);
    INSERT INTO orders VALUES ${orders.join(',\n')};
    SELECT veil.attach('orders', 'email', 'Customer', 'email');

    CREATE TABLE audit_events (id int, email text);
    INSERT INTO audit_events VALUES ${auditEmails.map((e, i) => `(${i}, ${lit(e)})`).join(', ')};

    CREATE TABLE customers_clean (id int PRIMARY KEY, email text, city text, notes text, extra_email text);
    INSERT INTO customers_clean VALUES ${cleanCities.map((c, i) => `(${i}, ${lit(`protected-${i}`)}, ${lit(c)}, ${lit(notes[i]!)}, NULL)`).join(', ')};
    SELECT veil.attach('customers_clean', 'email', 'Customer', 'email');

    CREATE SCHEMA ${ident(ODD_SCHEMA)};
    CREATE TABLE ${ident(ODD_SCHEMA)}.${ident(ODD_TABLE)} (${ident(ODD_ATTACHED)} text, ${ident(ODD_INJECT)} text, ${ident(ODD_NEWLINE)} varchar(100), ${ident(ODD_ESCAPE)} char(60));
    INSERT INTO ${ident(ODD_SCHEMA)}.${ident(ODD_TABLE)} VALUES ${oddEmails.map((e, i) => `(${lit(`protected-${i}`)}, ${lit(e)}, ${lit(e)}, ${lit(e)})`).join(', ')};
    SELECT veil.attach(${lit(`${ident(ODD_SCHEMA)}.${ident(ODD_TABLE)}`)}, ${lit(ODD_ATTACHED)}, 'Customer', 'email');

    CREATE TABLE parted (id int, email text, mobile text) PARTITION BY RANGE (id);
    CREATE TABLE parted_a PARTITION OF parted FOR VALUES FROM (0) TO (100);
    CREATE TABLE parted_b PARTITION OF parted FOR VALUES FROM (100) TO (200);
    INSERT INTO parted SELECT i, 'p-' || i, '+44 20 7946 0958' FROM generate_series(0, 199) i;
    SELECT veil.attach('parted', 'email', 'Customer', 'email');

    CREATE TABLE big (id int PRIMARY KEY, email text, backup_email text, info json);
    COPY big FROM STDIN;
${bigValues.join('\n')}
\\.
    ANALYZE big;
    SELECT veil.attach('big', 'email', 'Customer', 'email');

    GRANT SELECT (id, email, backup_email) ON orders TO ${checker};`,
    { database: db },
  );
}, 120_000);

afterAll(async () => {
  await sql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE);\nDROP ROLE IF EXISTS ${checker};`).catch(() => undefined);
});

describe('veil db check', () => {
  it('reports the unattached columns and JSON paths holding personal data, exits 3, and prints no sampled value', async () => {
    const run = await check(['--json']);
    expect(run.code, run.stderr).toBe(3);
    noValueIn(run);
    const report = JSON.parse(run.stdout) as JsonReport;
    expect(report.status).toBe('findings');
    const found = report.findings.map((f) => `${f.schema}.${f.table}.${f.column}${f.path ? ` -> ${f.path}` : ''}: ${f.kind} ${f.matched}/${f.values}`);
    expect(found).toEqual([
      `${ODD_SCHEMA}.${ODD_TABLE}.${ODD_INJECT}: email 3/3`,
      `${ODD_SCHEMA}.${ODD_TABLE}.${ODD_NEWLINE}: email 3/3`,
      `${ODD_SCHEMA}.${ODD_TABLE}.${ODD_ESCAPE}: email 3/3`,
      expect.stringMatching(/^public\.big\.backup_email: email (\d+)\/\1$/),
      'public.orders.backup_email: email 6/6',
      'public.orders.details -> contact.email: email 6/6',
      'public.orders.iban: iban 6/6',
      'public.orders.full_name: person-name 6/6',
      'public.parted.mobile: phone 200/200',
    ]);
    // the tables with attached columns, each once (partitions through their parent); audit_events has none
    expect(report.tables.map((t) => `${t.schema}.${t.table}`)).toEqual([
      `${ODD_SCHEMA}.${ODD_TABLE}`,
      'public.big',
      'public.customers_clean',
      'public.orders',
      'public.parted',
    ]);
    const orders = report.tables.find((t) => t.table === 'orders')!;
    expect(orders).toMatchObject({
      attached: ['email'],
      checked: ['backup_email', 'details', 'iban', 'notes', 'empty_email', 'full_name'],
      rowsSampled: ROWS,
      method: 'first-rows',
    });
    // free text is no finding, and a column named like personal data holding only NULLs is none either
    expect(report.findings.filter((f) => ['notes', 'empty_email', 'id', 'email'].includes(f.column) || f.table === 'customers_clean')).toEqual([]);
    // the big table: a bounded sample from random pages, which finds a column filled only in its last rows
    const big = report.tables.find((t) => t.table === 'big')!;
    expect(big.method).toBe('pages');
    expect(big.rowsSampled).toBeGreaterThan(0);
    expect(big.rowsSampled).toBeLessThanOrEqual(1000);
  });

  it('the text report names schema.table.column -> path, kind and counts, quoting odd names', async () => {
    const run = await check(['--table', 'orders', '--table', ODD_TABLE]);
    expect(run.code, run.stderr).toBe(3);
    noValueIn(run);
    expect(run.stdout).toMatch(/^public\.orders: 4 finding\(s\) \(6 row\(s\) sampled, 6 unattached text\/JSON column\(s\); attached: email\)$/m);
    expect(run.stdout).toMatch(/^ {2}public\.orders\.details -> contact\.email +email +6\/6 values$/m);
    expect(run.stdout).toMatch(/^ {2}public\.orders\.full_name +person-name +6\/6 values {2}\(by its name\)$/m);
    expect(run.stdout).toContain('"Odd ""sch"".ema"."we""ird\'; DROP TABLE public.orders; --"."back\\u{a}up mail"');
    expect(run.stdout).toContain('"esc\\u{1b}[2Jmail"');
    // no raw control character reaches the terminal
    expect(run.stdout).not.toMatch(/\u001b/);
    expect(run.stdout.split('\n').filter((l) => l.includes('up mail'))).toHaveLength(1);
    expect(run.stdout).not.toContain('public.big');
  });

  it('names with quotes and statements are identifiers, never SQL: every table is still there', async () => {
    const run = await check(['--table', `${ODD_SCHEMA}.${ODD_TABLE}`, '--json']);
    expect(run.code, run.stderr).toBe(3);
    noValueIn(run);
    expect((JSON.parse(run.stdout) as JsonReport).findings.map((f) => f.column)).toEqual([ODD_INJECT, ODD_NEWLINE, ODD_ESCAPE]);
    expect(await sql(`SELECT count(*) FROM orders;\nSELECT count(*) FROM ${ident(ODD_SCHEMA)}.${ident(ODD_TABLE)};`, { database: db })).toEqual([
      String(ROWS),
      '3',
    ]);
    // a --table with SQL in it is only compared with the catalog's names
    const inject = await check(['--table', 'orders; DROP TABLE orders', '--table', "x' OR '1'='1"]);
    expect(inject.code).toBe(1);
    expect(inject.stdout).toMatch(/no table of that name has columns attached to veil/);
    expect(await sql('SELECT count(*) FROM orders;', { database: db })).toEqual([String(ROWS)]);
  });

  it('a clean table exits 0; a table without attached columns is not checked', async () => {
    const clean = await check(['--table', 'public.customers_clean']);
    expect(clean.code, clean.stdout + clean.stderr).toBe(0);
    noValueIn(clean);
    expect(clean.stdout).toMatch(/^public\.customers_clean: clean \(6 row\(s\) sampled, 3 unattached text\/JSON column\(s\); attached: email\)$/m);
    const none = await check(['--table', 'audit_events', '--json']);
    expect(none.code).toBe(1);
    expect(JSON.parse(none.stdout) as JsonReport).toMatchObject({ status: 'incomplete', findings: [], tables: [], unmatchedTables: ['audit_events'] });
  });

  it('--sample bounds the rows read per table', async () => {
    const run = await check(['--table', 'big', '--table', 'orders', '--sample', '3', '--json']);
    expect(run.code).toBe(3);
    const report = JSON.parse(run.stdout) as JsonReport;
    expect(report.tables.map((t) => t.rowsSampled)).toEqual([expect.any(Number), 3]);
    expect(report.tables[0]!.rowsSampled).toBeLessThanOrEqual(3);
  });

  it('columns the role may not read make the check incomplete (exit 1), and are named', async () => {
    const run = await check(['--table', 'orders'], databaseUrl(db, checker));
    expect(run.code, run.stderr).toBe(1);
    noValueIn(run);
    expect(run.stdout).toMatch(/^ {2}public\.orders\.backup_email +email +6\/6 values$/m);
    expect(run.stdout).toContain('not checked, no SELECT privilege: details, iban, notes, empty_email, full_name');
    expect(run.stdout).toMatch(/the check is incomplete/);
  });

  it("a database it cannot reach: exit 1, a message without the URL's secret", async () => {
    const run = await check(['--json'], 'postgres://postgres:s3cret-pw@127.0.0.1:1/nowhere');
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^veil db check: cannot reach the database \(ECONNREFUSED\)$/m);
    expect(JSON.parse(run.stdout)).toEqual({ status: 'error', error: 'cannot reach the database (ECONNREFUSED)' });
    expect(run.stdout + run.stderr).not.toContain('s3cret-pw');
    const usage = await check(['--sample', 'lots']);
    expect(usage.code).toBe(2);
  });
});
