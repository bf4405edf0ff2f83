import { normaliseName, type Kind } from '../discover/index.ts';
import { MASKED, pathSegment, Profiler } from '../discover/index.ts';
import type { SqlSession } from './rewrap.ts';
import { quoteIdent, triggerMapping, VEIL_TRIGGER } from './rewrap-sql.ts';

/**
 * `veil db check`: finds personal data that veil does not protect in the tables it protects.
 * For each table with at least one column attached to veil's trigger (veil.attach), a bounded
 * sample of its rows is read — the text-like columns (text, varchar, char, citext and domains
 * over them) and the JSON ones (json, jsonb) that are not attached — and run through
 * `veil discover`'s detectors and profiler (src/discover): a column, or a path inside a JSON
 * column, whose sampled values are mostly of one kind is a finding. Findings carry names,
 * paths, kinds and counts: a sampled value is looked at once, never kept, printed or logged.
 *
 * The attached columns are read where veil keeps them: the arguments of the table's trigger
 * zz_veil_protect ((column, class, property) triples, see src/db/plpython/veil_admin.py), from
 * pg_catalog.pg_trigger, which every role may read. Names come from the catalog and go back to
 * the server double-quoted (quoteIdent); every other input is a parameter.
 */

/** The catalog's view of a table veil protects. */
export interface CheckTable {
  oid: string;
  schema: string;
  name: string;
  /** r: a table, p: a partitioned table (sampled through its partitions) */
  kind: 'r' | 'p';
  /** the planner's estimate of its rows (reltuples scaled to the relation's current size); null when never analysed */
  estimatedRows: number | null;
  /** its size in pages (blocks), now */
  blocks: number;
  /** the columns veil's trigger protects, in the trigger's order */
  attached: string[];
  /** the unattached columns that can hold text: the ones sampled */
  candidates: CandidateColumn[];
  /** candidate columns this role may not SELECT: not sampled (the check is incomplete) */
  unreadable: string[];
}

export interface CandidateColumn {
  name: string;
  /** text: compared as a string; json: parsed and walked by path */
  family: 'text' | 'json';
  /** as format_type() prints it: `character varying(300)`, `jsonb` */
  type: string;
}

/**
 * The relations with veil's row trigger. A partition whose parent has it carries a clone of the
 * parent's trigger (PostgreSQL copies row triggers of a partitioned table to its partitions): it
 * is checked through its parent, not again on its own. The row estimate scales reltuples to the
 * relation's current size (blocks) as the planner does, NULL when never analysed; a partitioned
 * table sums its leaves.
 */
export const TABLES_SQL = `WITH rel AS (
    SELECT c.oid, c.reltuples::pg_catalog.float8 AS tuples, c.relpages::pg_catalog.float8 AS pages,
      pg_catalog.pg_relation_size(c.oid)::pg_catalog.float8 / pg_catalog.current_setting('block_size')::pg_catalog.float8 AS blocks
    FROM pg_catalog.pg_class c WHERE c.relkind = 'r'
  ), est AS (
    SELECT oid, blocks, CASE WHEN tuples < 0 THEN NULL WHEN pages > 0 THEN tuples / pages * blocks WHEN blocks = 0 THEN 0 END AS rows FROM rel
  )
  SELECT c.oid::pg_catalog.int8::pg_catalog.text AS oid, n.nspname::pg_catalog.text AS schema, c.relname::pg_catalog.text AS name,
    c.relkind::pg_catalog.text AS kind, t.tgargs AS args, s.rows AS estimated_rows, s.blocks
  FROM pg_catalog.pg_trigger t
  JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  CROSS JOIN LATERAL (
    SELECT CASE WHEN pg_catalog.bool_and(e.rows IS NOT NULL) THEN pg_catalog.sum(e.rows) END AS rows, pg_catalog.sum(e.blocks) AS blocks
    FROM est e WHERE e.oid = c.oid
      OR (c.relkind = 'p' AND e.oid IN (SELECT p.relid FROM pg_catalog.pg_partition_tree(c.oid::pg_catalog.regclass) p WHERE p.isleaf))
  ) s
  WHERE t.tgname = $1 AND c.relkind IN ('r', 'p')
    AND NOT (c.relispartition AND EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i
      JOIN pg_catalog.pg_trigger pt ON pt.tgrelid = i.inhparent AND pt.tgname = t.tgname WHERE i.inhrelid = c.oid))
  ORDER BY n.nspname, c.relname`;

/**
 * The columns of the tables ($1, oids) that can hold text: text, varchar, char (bpchar), citext,
 * json, jsonb, and domains over them (the domain's base type decides); whether this role may read
 * each.
 */
export const COLUMNS_SQL = `SELECT a.attrelid::pg_catalog.int8::pg_catalog.text AS oid, a.attname::pg_catalog.text AS name,
    CASE WHEN b.oid IN ('pg_catalog.json'::pg_catalog.regtype, 'pg_catalog.jsonb'::pg_catalog.regtype) THEN 'json' ELSE 'text' END AS family,
    pg_catalog.format_type(a.atttypid, a.atttypmod) AS type,
    pg_catalog.has_column_privilege(a.attrelid, a.attnum, 'SELECT') AS readable
  FROM pg_catalog.pg_attribute a
  JOIN pg_catalog.pg_type ty ON ty.oid = a.atttypid
  JOIN pg_catalog.pg_type b ON b.oid = CASE WHEN ty.typtype = 'd' THEN ty.typbasetype ELSE ty.oid END
  WHERE a.attrelid = ANY ($1::pg_catalog.oid[]) AND a.attnum > 0 AND NOT a.attisdropped
    AND (b.oid IN ('pg_catalog.text'::pg_catalog.regtype, 'pg_catalog.varchar'::pg_catalog.regtype, 'pg_catalog.bpchar'::pg_catalog.regtype,
      'pg_catalog.json'::pg_catalog.regtype, 'pg_catalog.jsonb'::pg_catalog.regtype) OR b.typname = 'citext')
  ORDER BY a.attrelid, a.attnum`;

/** Session settings of a check: it only reads, never waits long for a lock, and names everything by pg_catalog. */
export const SESSION_SQL = [
  'SET default_transaction_read_only = on',
  "SET statement_timeout = '300s'",
  "SET lock_timeout = '30s'",
  'SET search_path = pg_catalog, pg_temp',
] as const;

/** Text values longer than this (characters) match no detector: they are counted as values, not looked at. */
export const TEXT_LIMIT = 1000;
/** JSON values larger than this (bytes stored, and as text) are skipped and counted as skipped. */
export const JSON_LIMIT = 256 * 1024;

/** At least this many pages are sampled from a big table: TABLESAMPLE SYSTEM picks whole pages, and a few would cluster the sample. */
export const MIN_PAGES = 64;

/**
 * How a table is sampled. With an estimate of its rows above twice the sample, a random share of
 * its pages (TABLESAMPLE SYSTEM, which reads only those pages) holding about twice the sample
 * rows, and at least MIN_PAGES pages, of which `limit` rows at random: the sample spreads over
 * the whole table (recent rows included, where a new column's values are). Else (a small table,
 * or one never analysed) the first `limit` rows. Either way the server reads a bounded number of
 * rows, never the whole of a big table.
 */
export function samplePlan(estimatedRows: number | null, blocks: number, limit: number): { percent?: number } {
  if (estimatedRows === null || !(estimatedRows > 2 * limit)) return {};
  const share = Math.max((2 * limit) / estimatedRows, blocks > 0 ? MIN_PAGES / blocks : 0);
  return { percent: Math.max(1e-6, Math.min(100, 100 * share)) };
}

/** The qualified, quoted name of a table. */
export function tableIdent(t: Pick<CheckTable, 'schema' | 'name'>): string {
  return `${quoteIdent(t.schema)}.${quoteIdent(t.name)}`;
}

/**
 * The sample's statement: per candidate column i, `c<i>` (text cut to TEXT_LIMIT + 1 characters;
 * JSON as text, NULL when larger than JSON_LIMIT) and, for JSON, `o<i>` (true: skipped as too
 * large). Parameters: $1 the limit, then $2 the percentage of pages when sampling pages.
 */
export function sampleSql(t: Pick<CheckTable, 'schema' | 'name' | 'kind' | 'candidates'>, plan: { percent?: number }): string {
  const exprs = t.candidates.flatMap((c, i) => {
    const col = `t.${quoteIdent(c.name)}`;
    if (c.family === 'text') return [`pg_catalog.left(${col}::pg_catalog.text, ${TEXT_LIMIT + 1}) AS c${i}`];
    const small = `pg_catalog.pg_column_size(${col}) <= ${JSON_LIMIT} AND pg_catalog.octet_length(${col}::pg_catalog.text) <= ${JSON_LIMIT}`;
    return [`CASE WHEN ${small} THEN ${col}::pg_catalog.text END AS c${i}`, `(${col} IS NOT NULL AND NOT (${small})) AS o${i}`];
  });
  // ONLY: a table's inheritance children are tables of their own; a partitioned table is read through its partitions
  const from = `${t.kind === 'r' ? 'ONLY ' : ''}${tableIdent(t)} t`;
  const sample = plan.percent === undefined ? '' : ' TABLESAMPLE SYSTEM ($2::pg_catalog.float4) ORDER BY pg_catalog.random()';
  return `SELECT ${exprs.join(', ')} FROM ${from}${sample} LIMIT $1`;
}

/** One unattached column, or a path inside one, whose sampled values are mostly of one kind. */
export interface DriftFinding {
  schema: string;
  table: string;
  column: string;
  /** the path inside a JSON column (`contact.email`, `items[].email`; `*` for a key that may be data); '' for the column itself */
  path: string;
  kind: Kind;
  /** sampled values at the column or path (NULLs not counted) */
  values: number;
  /** of those, how many the kind's validator accepted */
  matched: number;
  /** high: the values alone prove it; medium: the column's or field's name was needed (person names, dates of birth) */
  confidence: 'high' | 'medium';
}

export interface TableCheck {
  schema: string;
  table: string;
  attached: string[];
  /** the columns sampled */
  checked: string[];
  rowsSampled: number;
  /** sampled pages (TABLESAMPLE) or the first rows */
  method: 'pages' | 'first-rows';
  findings: DriftFinding[];
  /** JSON values skipped as larger than JSON_LIMIT, by column */
  skipped: { column: string; values: number }[];
  /** columns not checked: no SELECT privilege */
  unreadable: string[];
  /** why the table could not be sampled (names and codes, never a value) */
  error?: string;
}

export interface DriftReport {
  sampleLimit: number;
  minShare: number;
  tables: TableCheck[];
  /** --table names that match no table with attached columns */
  unmatched: string[];
}

/** A failure's text for a report: PostgreSQL's code, its message where it names objects only. */
export function failureText(e: unknown): string {
  const pgError = e as { code?: unknown; message?: unknown; severity?: unknown };
  if (typeof pgError.severity === 'string' && typeof pgError.code === 'string') {
    // connection, authorisation, access and resource errors name objects; others (data errors,
    // 22xxx) can quote a value in their message: only their code
    return /^(08|28|3D|3F|42|53|54|55|57|58)/.test(pgError.code) && typeof pgError.message === 'string'
      ? `PostgreSQL ${pgError.code}: ${pgError.message}`
      : `PostgreSQL ${pgError.code}`;
  }
  if (typeof pgError.code === 'string') return `cannot reach the database (${pgError.code})`;
  return `unexpected error (${(e as Error)?.name ?? 'error'})`;
}

/**
 * Which of the tables `--table` names: `name` matches that table in any schema, `schema.name`
 * the one table; compared with the catalog's names as they are (case-sensitive, no quoting), so a
 * name with dots or quotes is named as it is stored.
 */
export function selectTables<T extends Pick<CheckTable, 'schema' | 'name'>>(
  tables: readonly T[],
  names: readonly string[] | undefined,
): { selected: T[]; unmatched: string[] } {
  if (!names || names.length === 0) return { selected: [...tables], unmatched: [] };
  const matches = (t: T, n: string) => n === t.name || n === `${t.schema}.${t.name}`;
  return {
    selected: tables.filter((t) => names.some((n) => matches(t, n))),
    unmatched: names.filter((n) => !tables.some((t) => matches(t, n))),
  };
}

/** The keys of the profiler's records must be field names it shows as they are (not `*`). */
const shownAsIs = (key: string) => pathSegment(key) !== MASKED;

/**
 * The profiler's key for each column: `_` and the column's normalised name (the detectors read
 * only that: `Backup-Email` and `backup_email` both say email), underscores added to keep two
 * columns apart, `_c<i>` if nothing else fits. A key starting with `_` is no detector's value, so
 * the profiler shows it as it is, and the path maps back to the column.
 */
export function profilerKeys(columns: readonly string[]): string[] {
  const used = new Set<string>();
  return columns.map((column, i) => {
    const base = `_${normaliseName(column)}`;
    const tries = [
      base,
      ...Array.from({ length: 8 }, (_, k) => `${base}${'_'.repeat(k + 1)}`),
      `_c${i}`,
      ...Array.from({ length: 64 }, (_, k) => `_c${i}${'_'.repeat(k + 1)}`),
    ];
    const key = tries.find((k) => shownAsIs(k) && !used.has(k));
    if (key === undefined) throw new Error('no profiler key for a column');
    used.add(key);
    return key;
  });
}

/**
 * Profiles sampled rows of a table. Each row is one record `{ <table>: { <column>: value } }`:
 * the profiler sees the table's name as the parent of its columns (a `name` in `customers` is a
 * person's) and the row's other columns as neighbours; a JSON column's value is its parsed
 * document, walked by path. NULLs are left out (a column of NULLs is no finding). Returns the
 * findings, values skipped as too large by column, and the rows seen.
 */
export class TableProfile {
  private readonly profiler = new Profiler();
  private readonly keys: string[];
  private readonly tableKey: string;
  private readonly skipped: number[];
  private readonly table: Pick<CheckTable, 'schema' | 'name' | 'candidates'>;
  rows = 0;

  constructor(table: Pick<CheckTable, 'schema' | 'name' | 'candidates'>) {
    this.table = table;
    this.keys = profilerKeys(table.candidates.map((c) => c.name));
    this.tableKey = `_${normaliseName(table.name)}`.slice(0, 64);
    this.skipped = table.candidates.map(() => 0);
  }

  /** One row as the sample statement returns it (c<i>, o<i>). Its values are not kept. */
  add(row: Record<string, unknown>): void {
    this.rows++;
    const record: Record<string, unknown> = {};
    this.table.candidates.forEach((c, i) => {
      const raw = row[`c${i}`];
      if (c.family === 'json' && row[`o${i}`] === true) this.skipped[i]!++;
      if (typeof raw !== 'string') return;
      if (c.family === 'text') {
        // a long text is a value, but no detector accepts one: counted, not looked at
        record[this.keys[i]!] = raw.length > TEXT_LIMIT ? '' : raw;
        return;
      }
      try {
        record[this.keys[i]!] = JSON.parse(raw) as unknown;
      } catch {
        // json and jsonb hold valid JSON; never report the parser's message (it quotes the text)
        this.skipped[i]!++;
      }
    });
    this.profiler.add({ [this.tableKey]: record });
  }

  findings(minShare: number): DriftFinding[] {
    const byKey = new Map(this.keys.map((k, i) => [k, i]));
    const out: (DriftFinding & { at: number })[] = [];
    for (const f of this.profiler.findings(minShare)) {
      // <table key>.<column key>[rest]: rest is '', '.a.b', '[].a'
      const afterTable = f.path.slice(f.path.indexOf('.') + 1);
      const m = /^([A-Za-z0-9_]+)(.*)$/.exec(afterTable);
      const at = m ? byKey.get(m[1]!) : undefined;
      if (!m || at === undefined) continue;
      const rest = m[2]!.startsWith('.') ? m[2]!.slice(1) : m[2]!;
      out.push({
        at,
        schema: this.table.schema,
        table: this.table.name,
        column: this.table.candidates[at]!.name,
        path: rest,
        kind: f.kind,
        values: f.values,
        matched: f.matched,
        confidence: f.confidence,
      });
    }
    // in the table's column order, then by path
    return out.sort((a, b) => a.at - b.at || a.path.localeCompare(b.path)).map(({ at: _, ...f }) => f);
  }

  skippedValues(): { column: string; values: number }[] {
    return this.table.candidates.map((c, i) => ({ column: c.name, values: this.skipped[i]! })).filter((s) => s.values > 0);
  }
}

interface TableRow {
  oid: string;
  schema: string;
  name: string;
  kind: string;
  args: Uint8Array;
  estimated_rows: number | string | null;
  blocks: number | string | null;
}

/** The tables veil protects, each with its attached columns and the unattached text and JSON columns. */
export async function protectedTables(session: SqlSession): Promise<CheckTable[]> {
  const rows = (await session.query(TABLES_SQL, [VEIL_TRIGGER])).rows as unknown as TableRow[];
  if (rows.length === 0) return [];
  const columns = (await session.query(COLUMNS_SQL, [rows.map((r) => r.oid)])).rows as {
    oid: string;
    name: string;
    family: 'text' | 'json';
    type: string;
    readable: boolean;
  }[];
  return rows.map((r) => {
    const attached = [...new Set(triggerMapping(r.args).map((m) => m.column))];
    const own = columns.filter((c) => c.oid === r.oid && !attached.includes(c.name));
    const estimate = r.estimated_rows === null ? null : Number(r.estimated_rows);
    return {
      oid: r.oid,
      schema: r.schema,
      name: r.name,
      kind: r.kind === 'p' ? 'p' : 'r',
      estimatedRows: estimate !== null && Number.isFinite(estimate) ? estimate : null,
      blocks: Number(r.blocks ?? 0) || 0,
      attached,
      candidates: own.filter((c) => c.readable).map((c) => ({ name: c.name, family: c.family, type: c.type })),
      unreadable: own.filter((c) => !c.readable).map((c) => c.name),
    };
  });
}

/** Samples one table and profiles it; a failure is the table's error, not the run's. */
export async function checkTable(session: SqlSession, t: CheckTable, sample: number, minShare: number): Promise<TableCheck> {
  const plan = samplePlan(t.estimatedRows, t.blocks, sample);
  const result: TableCheck = {
    schema: t.schema,
    table: t.name,
    attached: t.attached,
    checked: t.candidates.map((c) => c.name),
    rowsSampled: 0,
    method: plan.percent === undefined ? 'first-rows' : 'pages',
    findings: [],
    skipped: [],
    unreadable: t.unreadable,
  };
  if (t.candidates.length === 0) return result;
  const profile = new TableProfile(t);
  try {
    const rows = (await session.query(sampleSql(t, plan), plan.percent === undefined ? [sample] : [sample, plan.percent])).rows;
    for (const row of rows) profile.add(row);
  } catch (e) {
    return { ...result, error: failureText(e) };
  }
  return { ...result, rowsSampled: profile.rows, findings: profile.findings(minShare), skipped: profile.skippedValues() };
}

export interface DriftCheckOptions {
  /** --table: names as the catalog has them, `name` or `schema.name`; none: every table veil protects */
  tables?: readonly string[];
  /** rows sampled per table */
  sample: number;
  /** a column or path is reported when at least this share of its values is of one kind */
  minShare: number;
}

/** The whole check on one connection (its session settings are SESSION_SQL's). */
export async function runDriftCheck(session: SqlSession, o: DriftCheckOptions): Promise<DriftReport> {
  for (const statement of SESSION_SQL) await session.query(statement);
  const { selected, unmatched } = selectTables(await protectedTables(session), o.tables);
  const tables: TableCheck[] = [];
  for (const t of selected) tables.push(await checkTable(session, t, o.sample, o.minShare));
  return { sampleLimit: o.sample, minShare: o.minShare, tables, unmatched };
}

/** 0 clean, 3 findings, 1 incomplete (a table not sampled, a column not readable, a --table not found): an error wins. */
export function exitCodeOf(report: DriftReport): 0 | 1 | 3 {
  if (report.unmatched.length > 0 || report.tables.some((t) => t.error !== undefined || t.unreadable.length > 0)) return 1;
  return report.tables.some((t) => t.findings.length > 0) ? 3 : 0;
}

/**
 * A name for the terminal: as it is when a plain lower-case identifier, else double-quoted as SQL
 * quotes it, with control characters shown as \u{…} (a name cannot move the cursor or forge a line).
 */
export function displayIdent(name: string): string {
  if (/^[a-z_][a-z0-9_$]*$/.test(name)) return name;
  return `"${name.replaceAll('"', '""').replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`)}"`;
}

/** `schema.table.column -> path` for a finding. */
export function findingName(f: Pick<DriftFinding, 'schema' | 'table' | 'column' | 'path'>): string {
  const column = `${displayIdent(f.schema)}.${displayIdent(f.table)}.${displayIdent(f.column)}`;
  return f.path === '' ? column : `${column} -> ${f.path}`;
}

/** The report for people: per table its outcome, per finding name, kind, matched/values; never a value. */
export function textReport(r: DriftReport): string {
  const lines: string[] = [];
  const findings = r.tables.flatMap((t) => t.findings);
  for (const n of r.unmatched) lines.push(`--table ${JSON.stringify(n)}: no table of that name has columns attached to veil`);
  if (r.tables.length === 0 && r.unmatched.length === 0) lines.push('no table has columns attached to veil: nothing to check');
  for (const t of r.tables) {
    const name = `${displayIdent(t.schema)}.${displayIdent(t.table)}`;
    const how = `${t.rowsSampled} row(s) sampled${t.method === 'pages' ? ' from random pages' : ''}, ${t.checked.length} unattached text/JSON column(s)`;
    if (t.error !== undefined) lines.push(`${name}: not checked: ${t.error}`);
    else
      lines.push(
        `${name}: ${t.findings.length === 0 ? 'clean' : `${t.findings.length} finding(s)`} (${how}; attached: ${t.attached.map(displayIdent).join(', ')})`,
      );
    const width = Math.max(0, ...t.findings.map((f) => findingName(f).length));
    for (const f of t.findings)
      lines.push(
        `  ${findingName(f).padEnd(width)}  ${f.kind.padEnd(13)} ${String(f.matched).padStart(6)}/${f.values} values${f.confidence === 'medium' ? '  (by its name)' : ''}`,
      );
    for (const s of t.skipped) lines.push(`  ${displayIdent(s.column)}: ${s.values} JSON value(s) over ${JSON_LIMIT / 1024} KiB not looked at`);
    if (t.unreadable.length > 0) lines.push(`  not checked, no SELECT privilege: ${t.unreadable.map(displayIdent).join(', ')}`);
  }
  const errors = r.tables.filter((t) => t.error !== undefined || t.unreadable.length > 0).length + r.unmatched.length;
  lines.push(
    findings.length === 0
      ? `${errors === 0 ? 'clean' : 'no findings'}: no unattached column of ${r.tables.length} table(s) holds personal data in the sample${errors === 0 ? '' : `; ${errors} problem(s) above: the check is incomplete`}`
      : `${findings.length} unattached column(s) or JSON path(s) hold personal data: attach them (veil.attach), or protect the JSON field before it is written${errors === 0 ? '' : `; ${errors} problem(s) above: the check is incomplete`}`,
  );
  return `${lines.join('\n')}\n`;
}

/** The report for CI, one JSON document: findings flat, tables with their outcome. */
export function jsonReport(r: DriftReport): string {
  const exitCode = exitCodeOf(r);
  return `${JSON.stringify(
    {
      status: exitCode === 0 ? 'clean' : exitCode === 3 ? 'findings' : 'incomplete',
      sampleLimit: r.sampleLimit,
      minShare: r.minShare,
      findings: r.tables.flatMap((t) => t.findings.map((f) => ({ ...f, rowsSampled: t.rowsSampled }))),
      tables: r.tables.map((t) => ({
        schema: t.schema,
        table: t.table,
        attached: t.attached,
        checked: t.checked,
        rowsSampled: t.rowsSampled,
        method: t.method,
        findings: t.findings.length,
        skipped: t.skipped,
        unreadable: t.unreadable,
        ...(t.error === undefined ? {} : { error: t.error }),
      })),
      unmatchedTables: r.unmatched,
    },
    null,
    2,
  )}\n`;
}
