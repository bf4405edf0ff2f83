import { describe, expect, it } from 'vitest';
import { parseCheckArgs } from '../../src/cli/db-check.ts';
import { CliFault } from '../../src/cli/errors.ts';
import {
  COLUMNS_SQL,
  displayIdent,
  exitCodeOf,
  failureText,
  findingName,
  jsonReport,
  MIN_PAGES,
  profilerKeys,
  runDriftCheck,
  samplePlan,
  sampleSql,
  selectTables,
  TABLES_SQL,
  TableProfile,
  textReport,
  type CandidateColumn,
  type DriftReport,
} from '../../src/db/drift-check.ts';
import type { SqlSession } from '../../src/db/rewrap.ts';

/**
 * `veil db check`'s pure parts: the sample statement, the choice of tables, the profile of
 * sampled rows (columns and paths inside JSON), the reports and exit codes, the command line.
 * test/integration/db/db-check.test.ts runs it against the real PostgreSQL.
 */
const EMAILS = ['ada@example.com', 'grace@example.org', 'alan@example.net'];
const IBAN = 'DE89 3704 0044 0532 0130 00';

const columns: CandidateColumn[] = [
  { name: 'backup_email', family: 'text', type: 'text' },
  { name: 'details', family: 'json', type: 'jsonb' },
  { name: 'notes', family: 'text', type: 'text' },
  { name: 'name', family: 'text', type: 'text' },
  { name: 'old_email', family: 'text', type: 'character varying(200)' },
];
const table = { schema: 'public', name: 'customers', kind: 'r' as const, candidates: columns };

function profiled(rows: Record<string, unknown>[], minShare = 0.8) {
  const p = new TableProfile(table);
  for (const row of rows) p.add(row);
  return { findings: p.findings(minShare), skipped: p.skippedValues(), rows: p.rows };
}

const row = (i: number): Record<string, unknown> => ({
  c0: EMAILS[i % 3],
  c1: JSON.stringify({ contact: { email: EMAILS[(i + 1) % 3], phone: '+44 20 7946 0958' }, items: [{ sku: `A-${i}`, qty: i }] }),
  o1: false,
  c2: `please ring twice, parcel ${i}`,
  c3: ['Ada Lovelace', 'Grace Hopper', 'Alan Turing'][i % 3],
  c4: null,
});

describe('veil db check: profiling sampled rows', () => {
  it('reports unattached columns and paths inside JSON by kind and counts; free text and NULL-only columns are not findings', () => {
    const { findings, rows } = profiled(Array.from({ length: 6 }, (_, i) => row(i)));
    expect(rows).toBe(6);
    expect(findings.map((f) => [f.column, f.path, f.kind, f.matched, f.values, f.confidence])).toEqual([
      ['backup_email', '', 'email', 6, 6, 'high'],
      ['details', 'contact.email', 'email', 6, 6, 'high'],
      ['details', 'contact.phone', 'phone', 6, 6, 'high'],
      // a generic `name` in a table of customers is a person's (the table's name is its parent)
      ['name', '', 'person-name', 6, 6, 'medium'],
    ]);
    expect(findings.every((f) => f.schema === 'public' && f.table === 'customers')).toBe(true);
    expect(findingName(findings[1]!)).toBe('public.customers.details -> contact.email');
    expect(findingName(findings[0]!)).toBe('public.customers.backup_email');
  });

  it('a generic `name` in a table that is not about people is not a person name', () => {
    const p = new TableProfile({ ...table, name: 'products' });
    for (let i = 0; i < 5; i++) p.add({ c3: ['Blue Chair', 'Desk Lamp'][i % 2] });
    expect(p.findings(0.8)).toEqual([]);
  });

  it('a share below --min-share is no finding; a lower --min-share reports it', () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({ c0: i < 6 ? EMAILS[0] : 'n/a' }));
    expect(profiled(rows).findings).toEqual([]);
    expect(profiled(rows, 0.5).findings.map((f) => [f.column, f.matched, f.values])).toEqual([['backup_email', 6, 10]]);
  });

  it('NULLs are not values: a column mostly NULL with a few emails is a finding on those values', () => {
    const rows = Array.from({ length: 100 }, (_, i) => ({ c0: i % 10 === 0 ? EMAILS[0] : null }));
    expect(profiled(rows).findings.map((f) => [f.column, f.matched, f.values])).toEqual([['backup_email', 10, 10]]);
  });

  it('a long text counts as a value no detector accepts; a JSON value too large is skipped and counted', () => {
    const long = `${EMAILS[0]} ${'x'.repeat(1000)}`;
    const { findings, skipped } = profiled(
      [
        { c0: long, c1: null, o1: true },
        { c0: EMAILS[0], c1: null, o1: true },
      ],
      0.5,
    );
    expect(findings.map((f) => [f.column, f.matched, f.values])).toEqual([['backup_email', 1, 2]]);
    expect(skipped).toEqual([{ column: 'details', values: 2 }]);
  });

  it('JSON arrays and a top-level JSON string report their path; keys that may be data show as *', () => {
    const p = new TableProfile({
      ...table,
      candidates: [
        { name: 'doc', family: 'json', type: 'json' },
        { name: 'raw', family: 'json', type: 'jsonb' },
      ],
    });
    for (let i = 0; i < 3; i++) {
      p.add({
        c0: JSON.stringify({ people: [{ email: EMAILS[i] }], byEmail: { [EMAILS[i]!]: { iban: IBAN } } }),
        o0: false,
        c1: JSON.stringify(EMAILS[i]),
        o1: false,
      });
    }
    expect(p.findings(0.8).map((f) => [f.column, f.path, f.kind])).toEqual([
      ['doc', 'byEmail.*.iban', 'iban'],
      ['doc', 'people[].email', 'email'],
      ['raw', '', 'email'],
    ]);
  });

  it('JSON that does not parse is skipped without its text reaching a message', () => {
    const p = new TableProfile({ ...table, candidates: [{ name: 'doc', family: 'json', type: 'json' }] });
    p.add({ c0: `{"email": "${EMAILS[0]}"`, o0: false });
    expect(p.skippedValues()).toEqual([{ column: 'doc', values: 1 }]);
  });

  it('columns with odd names keep their own names and their name hints, two alike stay apart', () => {
    const odd = ['e"mail', 'E-Mail', 'e mail', "x'); DROP TABLE t; --", '$$', '4111111111111111', 'Full Name'];
    const keys = profilerKeys(odd);
    expect(new Set(keys).size).toBe(odd.length);
    expect(keys.every((k) => /^_[A-Za-z0-9_]{0,63}$/.test(k))).toBe(true);
    expect(keys.slice(0, 3)).toEqual(['_email', '_email_', '_email__']);
    const p = new TableProfile({ schema: 'we"ird', name: 'T.1', candidates: odd.map((name) => ({ name, family: 'text' as const, type: 'text' })) });
    for (let i = 0; i < 3; i++) p.add(Object.fromEntries(odd.map((_, ci) => [`c${ci}`, ci === 6 ? 'Ada Lovelace' : EMAILS[i]])));
    const found = p.findings(0.8);
    expect(found.map((f) => `${f.column}:${f.kind}`).sort()).toEqual([...odd.slice(0, 6).map((c) => `${c}:email`), 'Full Name:person-name'].sort());
    expect(findingName(found.find((f) => f.column === 'e"mail')!)).toBe('"we""ird"."T.1"."e""mail"');
  });
});

describe('veil db check: the sample statement', () => {
  it('names are quoted, values are parameters; text is cut, JSON over the limit is left out and flagged', () => {
    const sql = sampleSql(
      {
        schema: 'we"ird',
        name: 'x"); DROP TABLE t; --',
        kind: 'r',
        candidates: [
          { name: 'a"b', family: 'text', type: 'text' },
          { name: 'doc', family: 'json', type: 'jsonb' },
        ],
      },
      {},
    );
    expect(sql).toBe(
      'SELECT pg_catalog.left(t."a""b"::pg_catalog.text, 1001) AS c0, ' +
        'CASE WHEN pg_catalog.pg_column_size(t."doc") <= 262144 AND pg_catalog.octet_length(t."doc"::pg_catalog.text) <= 262144 THEN t."doc"::pg_catalog.text END AS c1, ' +
        '(t."doc" IS NOT NULL AND NOT (pg_catalog.pg_column_size(t."doc") <= 262144 AND pg_catalog.octet_length(t."doc"::pg_catalog.text) <= 262144)) AS o1 ' +
        'FROM ONLY "we""ird"."x""); DROP TABLE t; --" t LIMIT $1',
    );
  });

  it('a big table is sampled from random pages, a partitioned one through its partitions', () => {
    const sql = sampleSql({ schema: 'public', name: 'events', kind: 'p', candidates: [{ name: 'email2', family: 'text', type: 'text' }] }, { percent: 2 });
    expect(sql).toBe(
      'SELECT pg_catalog.left(t."email2"::pg_catalog.text, 1001) AS c0 FROM "public"."events" t TABLESAMPLE SYSTEM ($2::pg_catalog.float4) ORDER BY pg_catalog.random() LIMIT $1',
    );
  });

  it('samplePlan: first rows for small or never-analysed tables; pages for twice the sample, at least MIN_PAGES', () => {
    expect(samplePlan(null, 1_000_000, 1000)).toEqual({});
    expect(samplePlan(2000, 20, 1000)).toEqual({});
    expect(samplePlan(10_000_000, 100_000, 1000)).toEqual({ percent: (100 * MIN_PAGES) / 100_000 });
    expect(samplePlan(100_000_000, 10_000_000, 1000)).toEqual({ percent: (100 * 2000) / 100_000_000 });
    expect(samplePlan(1_000_000, 1000, 100_000)).toEqual({ percent: 20 });
    expect(samplePlan(3000, 30, 1000)).toEqual({ percent: 100 });
  });

  it('the catalog queries name everything by pg_catalog and take their inputs as parameters', () => {
    for (const sql of [TABLES_SQL, COLUMNS_SQL]) {
      expect(sql).toMatch(/\$1/);
      expect(sql).not.toMatch(/\bFROM (?!pg_catalog\.|est\b|rel\b)[a-z_]+/i);
    }
  });
});

describe('veil db check: tables, exit codes and reports', () => {
  const tables = [
    { schema: 'public', name: 'orders' },
    { schema: 'crm', name: 'orders' },
    { schema: 'crm', name: 'a.b' },
  ];

  it('--table: a name in any schema, or schema.name, as the catalog spells it', () => {
    expect(selectTables(tables, undefined).selected).toHaveLength(3);
    expect(selectTables(tables, ['orders'])).toEqual({ selected: tables.slice(0, 2), unmatched: [] });
    expect(selectTables(tables, ['crm.orders', 'crm.a.b', 'Orders'])).toEqual({ selected: tables.slice(1), unmatched: ['Orders'] });
  });

  const report = (over: Partial<DriftReport['tables'][number]> = {}, unmatched: string[] = []): DriftReport => ({
    sampleLimit: 1000,
    minShare: 0.8,
    unmatched,
    tables: [
      {
        schema: 'public',
        table: 'orders',
        attached: ['email'],
        checked: ['backup_email', 'notes'],
        rowsSampled: 5,
        method: 'first-rows',
        findings: [],
        skipped: [],
        unreadable: [],
        ...over,
      },
    ],
  });
  const finding = {
    schema: 'public',
    table: 'orders',
    column: 'details',
    path: 'contact.email',
    kind: 'email' as const,
    values: 5,
    matched: 5,
    confidence: 'high' as const,
  };

  it('exit 0 clean, 3 findings, 1 when the check is incomplete (an error wins over findings)', () => {
    expect(exitCodeOf(report())).toBe(0);
    expect(exitCodeOf({ ...report(), tables: [] })).toBe(0);
    expect(exitCodeOf(report({ findings: [finding] }))).toBe(3);
    expect(exitCodeOf(report({ findings: [finding], error: 'PostgreSQL 42501: permission denied for table orders' }))).toBe(1);
    expect(exitCodeOf(report({ unreadable: ['notes'] }))).toBe(1);
    expect(exitCodeOf(report({}, ['nope']))).toBe(1);
  });

  it('the text report names, kinds and counts; the JSON report has the status, findings flat and the tables', () => {
    const text = textReport(report({ findings: [finding] }));
    expect(text).toContain('public.orders: 1 finding(s) (5 row(s) sampled, 2 unattached text/JSON column(s); attached: email)');
    expect(text).toMatch(/public\.orders\.details -> contact\.email +email +5\/5 values/);
    expect(text.trim().split('\n').at(-1)).toMatch(/^1 unattached column\(s\) or JSON path\(s\) hold personal data/);
    expect(textReport(report())).toMatch(/^public\.orders: clean .*\nclean: /);
    expect(textReport({ ...report(), tables: [] })).toMatch(/nothing to check/);
    const doc = JSON.parse(jsonReport(report({ findings: [finding] }))) as { status: string; findings: unknown[]; tables: { findings: number }[] };
    expect(doc.status).toBe('findings');
    expect(doc.findings).toEqual([{ ...finding, rowsSampled: 5 }]);
    expect(doc.tables[0]!.findings).toBe(1);
    expect((JSON.parse(jsonReport(report({ unreadable: ['notes'] }))) as { status: string }).status).toBe('incomplete');
  });

  it('names reach the terminal quoted, control characters shown as escapes', () => {
    expect(displayIdent('backup_email')).toBe('backup_email');
    expect(displayIdent('Backup')).toBe('"Backup"');
    expect(displayIdent('a"b')).toBe('"a""b"');
    expect(displayIdent('a\nb\u001b[2J')).toBe('"a\\u{a}b\\u{1b}[2J"');
  });

  it("a failure shows PostgreSQL's code, and its message only where it names objects", () => {
    expect(failureText({ severity: 'ERROR', code: '42501', message: 'permission denied for table orders' })).toBe(
      'PostgreSQL 42501: permission denied for table orders',
    );
    expect(failureText({ severity: 'ERROR', code: '22P02', message: `invalid input syntax for type integer: "${EMAILS[0]}"` })).toBe('PostgreSQL 22P02');
    expect(failureText(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe('cannot reach the database (ECONNREFUSED)');
    expect(failureText(new SyntaxError(`Unexpected token in JSON at ${EMAILS[0]}`))).toBe('unexpected error (SyntaxError)');
  });
});

describe('veil db check: a run on a fake session', () => {
  /** Answers the catalog queries with one table, the sample with `rows` or a failure. */
  function session(rows: Record<string, unknown>[] | Error): SqlSession & { statements: string[] } {
    const statements: string[] = [];
    const args = Buffer.from('email\0Customer\0email\0', 'utf8');
    return {
      statements,
      async query(text) {
        statements.push(text);
        if (text === TABLES_SQL) return { rows: [{ oid: '1', schema: 'public', name: 'orders', kind: 'r', args, estimated_rows: 5, blocks: 1 }], rowCount: 1 };
        if (text === COLUMNS_SQL) {
          return {
            rows: [
              { oid: '1', name: 'email', family: 'text', type: 'text', readable: true },
              { oid: '1', name: 'backup_email', family: 'text', type: 'text', readable: true },
              { oid: '1', name: 'secret_notes', family: 'text', type: 'text', readable: false },
            ],
            rowCount: 3,
          };
        }
        if (text.startsWith('SELECT pg_catalog.left')) {
          if (rows instanceof Error) throw rows;
          return { rows, rowCount: rows.length };
        }
        return { rows: [], rowCount: null };
      },
    };
  }

  it("reads the attached columns from the trigger's arguments, samples the others it may read, in a read-only session", async () => {
    const s = session(EMAILS.map((e) => ({ c0: e })));
    const r = await runDriftCheck(s, { sample: 10, minShare: 0.8 });
    expect(s.statements.slice(0, 4)).toContain('SET default_transaction_read_only = on');
    expect(s.statements.at(-1)).toBe('SELECT pg_catalog.left(t."backup_email"::pg_catalog.text, 1001) AS c0 FROM ONLY "public"."orders" t LIMIT $1');
    expect(r.tables[0]).toMatchObject({ attached: ['email'], checked: ['backup_email'], unreadable: ['secret_notes'], rowsSampled: 3 });
    expect(r.tables[0]!.findings.map((f) => f.column)).toEqual(['backup_email']);
    expect(exitCodeOf(r)).toBe(1);
  });

  it('a table that cannot be sampled is reported by code, never by what the error quotes', async () => {
    const failure = Object.assign(new Error(`value "${EMAILS[0]}" is bad`), { severity: 'ERROR', code: '22023' });
    const r = await runDriftCheck(session(failure), { sample: 10, minShare: 0.8 });
    expect(r.tables[0]!.error).toBe('PostgreSQL 22023');
    expect(textReport(r)).not.toContain(EMAILS[0]);
  });
});

describe('veil db check: the command line', () => {
  const env = { VEIL_PG_URL: 'postgres://u@h/db' };
  const usage = (args: string[], e: Record<string, string> = env) => {
    try {
      parseCheckArgs(args, e);
    } catch (err) {
      expect(err).toBeInstanceOf(CliFault);
      return (err as Error).message;
    }
    throw new Error(`accepted: ${args.join(' ')}`);
  };

  it('defaults: every table, 1000 rows, share 0.8, text, $VEIL_PG_URL ($DATABASE_URL last)', () => {
    expect(parseCheckArgs([], env)).toEqual({ tables: [], sample: 1000, minShare: 0.8, json: false, databaseUrl: 'postgres://u@h/db' });
    expect(
      parseCheckArgs(['--table', 'orders', '--table', 'crm.a"b', '--sample', '50', '--min-share', '0.5', '--json'], { DATABASE_URL: 'postgres://x/y' }),
    ).toEqual({ tables: ['orders', 'crm.a"b'], sample: 50, minShare: 0.5, json: true, databaseUrl: 'postgres://x/y' });
    expect(parseCheckArgs(['--help'], {})).toBe('help');
  });

  it('refuses bad options, naming the option and not the value', () => {
    expect(usage(['--sample', '0'])).toMatch(/--sample/);
    expect(usage(['--sample', '100001'])).toMatch(/--sample/);
    expect(usage(['--sample', '1e3'])).toMatch(/--sample/);
    expect(usage(['--min-share', '0'])).toMatch(/--min-share/);
    expect(usage(['--min-share', '1.5'])).toMatch(/--min-share/);
    expect(usage(['--table', ''])).toMatch(/--table/);
    expect(usage([], {})).toMatch(/--database-url/);
    expect(usage(['--nope'])).toMatch(/nope/);
  });
});
