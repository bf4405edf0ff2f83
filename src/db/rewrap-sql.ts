/**
 * The SQL of `veil db rewrap` (re-protection of a table's protected columns after a key rotation):
 * names checked and quoted, the catalog queries that decide whether a table can be rewrapped, the
 * batch statements and the progress tables. Pure: statements as text, every value a parameter.
 *
 * Names (table, columns) are SQL identifiers as the catalog stores them: letters, digits, `_` and
 * `$`, starting with a letter or `_`, at most 63 bytes; they are sent double-quoted, so they are
 * case-sensitive (`Customers` is not `customers`). Anything else is refused before a statement is
 * built, and quoteIdent() doubles any `"` all the same.
 */

/** An SQL identifier as veil accepts it on its command line. */
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** Where the progress of every rewrap lives (created on first use). */
export const PROGRESS_SCHEMA = 'veil_rewrap';

export interface TableName {
  schema?: string;
  name: string;
}

/** `table` or `schema.table`; throws with a message that repeats nothing of the input. */
export function parseTableName(text: string): TableName {
  const parts = text.split('.');
  if (parts.length > 2 || !parts.every((p) => IDENTIFIER.test(p))) {
    throw new Error('--table must be table or schema.table, each an SQL identifier (letters, digits, _ and $; at most 63)');
  }
  return parts.length === 2 ? { schema: parts[0]!, name: parts[1]! } : { name: parts[0]! };
}

export function checkColumnName(text: string, option: string): string {
  if (!IDENTIFIER.test(text)) throw new Error(`${option} must name a column by an SQL identifier (letters, digits, _ and $; at most 63)`);
  return text;
}

/** A double-quoted SQL identifier. */
export function quoteIdent(name: string): string {
  if (name.length === 0 || name.includes('\0')) throw new Error('an SQL identifier is not empty and holds no NUL');
  return `"${name.replaceAll('"', '""')}"`;
}

export function qualifiedName(t: TableName): string {
  return t.schema === undefined ? quoteIdent(t.name) : `${quoteIdent(t.schema)}.${quoteIdent(t.name)}`;
}

/**
 * What the catalog says about the table: the relation ($1, a qualified quoted name, through
 * to_regclass so that an unqualified one follows search_path), its columns, whether each column
 * is the only key of a valid unique index without predicate or expression, and whether it takes
 * part in a foreign key (either side).
 */
export const TABLE_SQL = `SELECT c.oid::int8::text AS oid, quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name, c.relkind::text AS kind
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE c.oid = pg_catalog.to_regclass($1)`;

export const COLUMNS_SQL = `SELECT a.attname::text AS name, a.attnum::int AS num, a.attnotnull AS not_null,
    a.atttypid IN ('pg_catalog.text'::pg_catalog.regtype, 'pg_catalog.varchar'::pg_catalog.regtype) AS texty,
    pg_catalog.format_type(a.atttypid, a.atttypmod) AS type,
    EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = a.attrelid AND i.indisunique AND i.indisvalid
      AND i.indpred IS NULL AND i.indexprs IS NULL AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum) AS unique_key,
    EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.contype = 'f'
      AND ((k.conrelid = a.attrelid AND a.attnum = ANY (k.conkey)) OR (k.confrelid = a.attrelid AND a.attnum = ANY (k.confkey)))) AS foreign_key
  FROM pg_catalog.pg_attribute a
  WHERE a.attrelid = $1::pg_catalog.oid AND a.attnum > 0 AND NOT a.attisdropped
  ORDER BY a.attnum`;

/**
 * veil's row trigger (veil.attach) on the table and, for a partitioned table, on its partitions
 * (pg_partition_tree lists nothing for a table that is not partitioned).
 */
export const VEIL_TRIGGER = 'zz_veil_protect';
export const TRIGGERS_SQL = `SELECT t.tgrelid::pg_catalog.regclass::text AS relation, t.tgrelid = $1::pg_catalog.oid AS own, t.tgenabled::text AS enabled, t.tgargs AS args
  FROM pg_catalog.pg_trigger t
  WHERE t.tgname = $2 AND (t.tgrelid = $1::pg_catalog.oid
    OR t.tgrelid IN (SELECT p.relid FROM pg_catalog.pg_partition_tree($1::pg_catalog.oid::pg_catalog.regclass) p))
  ORDER BY 2 DESC, 1`;

/** The class slot of the triple naming the subject column (veil.attach_subject; plpython/veil_admin.py SUBJECT_MARK). */
export const SUBJECT_MARK = '@subject';

function triples(args: Uint8Array): { column: string; className: string; propertyName: string }[] {
  const parts = Buffer.from(args).toString('utf8').split('\0').slice(0, -1);
  const out = [];
  for (let i = 0; i + 2 < parts.length; i += 3) out.push({ column: parts[i]!, className: parts[i + 1]!, propertyName: parts[i + 2]! });
  return out;
}

/** The protected columns among veil's trigger arguments (NUL-terminated (column, class, property) triples). */
export function triggerMapping(args: Uint8Array): { column: string; className: string; propertyName: string }[] {
  return triples(args).filter((t) => t.className !== SUBJECT_MARK);
}

/** The column naming each row's data subject among veil's trigger arguments, if the table names one. */
export function triggerSubject(args: Uint8Array): string | undefined {
  return triples(args).find((t) => t.className === SUBJECT_MARK)?.column;
}

/**
 * The progress of each table's rewrap: one row per table, updated in the transaction of each
 * batch (so a batch and its checkpoint commit together), and the values a rewrap refused, by row
 * key and column (never a value). Nothing is granted to PUBLIC.
 */
export const PROGRESS_DDL = [
  `CREATE SCHEMA IF NOT EXISTS ${PROGRESS_SCHEMA}`,
  `REVOKE ALL ON SCHEMA ${PROGRESS_SCHEMA} FROM PUBLIC`,
  `CREATE TABLE IF NOT EXISTS ${PROGRESS_SCHEMA}.progress (
    table_name text PRIMARY KEY,
    job uuid NOT NULL,
    key_column text NOT NULL,
    columns text NOT NULL,
    key_versions text NOT NULL,
    last_key text,
    rows_read bigint NOT NULL DEFAULT 0,
    rewrapped bigint NOT NULL DEFAULT 0,
    unchanged bigint NOT NULL DEFAULT 0,
    refused bigint NOT NULL DEFAULT 0,
    nulls bigint NOT NULL DEFAULT 0,
    rows_updated bigint NOT NULL DEFAULT 0,
    batches bigint NOT NULL DEFAULT 0,
    erased bigint NOT NULL DEFAULT 0,
    started_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
  )`,
  `CREATE TABLE IF NOT EXISTS ${PROGRESS_SCHEMA}.refused (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    table_name text NOT NULL,
    job uuid NOT NULL,
    key text NOT NULL,
    column_name text NOT NULL,
    code text NOT NULL,
    PRIMARY KEY (job, key, column_name)
  )`,
  `REVOKE ALL ON ${PROGRESS_SCHEMA}.progress, ${PROGRESS_SCHEMA}.refused FROM PUBLIC`,
];

/** veil_rewrap of an older veil: the count of erased subjects' values kept (issue 29) was added later. */
export const PROGRESS_ERASED_SQL = [
  `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = pg_catalog.to_regclass('${PROGRESS_SCHEMA}.progress')
    AND a.attname = 'erased' AND NOT a.attisdropped) AS ok`,
  `ALTER TABLE ${PROGRESS_SCHEMA}.progress ADD COLUMN IF NOT EXISTS erased bigint NOT NULL DEFAULT 0`,
] as const;

export const COUNTS = 'rows_read, rewrapped, unchanged, refused, nulls, rows_updated, batches, erased';

/** The table's progress row, locked until the transaction ends (a second run waits for it). */
export const LOCK_PROGRESS_SQL = `SELECT job::text, key_column, columns, key_versions, last_key, ${COUNTS}, started_at, finished_at
  FROM ${PROGRESS_SCHEMA}.progress WHERE table_name = $1 FOR UPDATE`;

/** A new job for the table: from the first row, counts at zero; the refusals of an older job go. */
export const START_JOB_SQL = [
  `INSERT INTO ${PROGRESS_SCHEMA}.progress AS p (table_name, job, key_column, columns, key_versions) VALUES ($1, $2::uuid, $3, $4, $5)
    ON CONFLICT (table_name) DO UPDATE SET job = EXCLUDED.job, key_column = EXCLUDED.key_column, columns = EXCLUDED.columns,
      key_versions = EXCLUDED.key_versions, last_key = NULL, rows_read = 0, rewrapped = 0, unchanged = 0, refused = 0, nulls = 0,
      rows_updated = 0, batches = 0, erased = 0, started_at = now(), updated_at = now(), finished_at = NULL`,
  `DELETE FROM ${PROGRESS_SCHEMA}.refused WHERE table_name = $1 AND job <> $2::uuid`,
] as const;

/** The checkpoint, in the batch's transaction: $1 table, $2 last key (NULL: none yet), $3… counts to add, $10 finished, $11 erased. */
export const CHECKPOINT_SQL = `UPDATE ${PROGRESS_SCHEMA}.progress SET last_key = coalesce($2, last_key),
    rows_read = rows_read + $3, rewrapped = rewrapped + $4, unchanged = unchanged + $5, refused = refused + $6, nulls = nulls + $7,
    rows_updated = rows_updated + $8, batches = batches + $9, erased = erased + $11, updated_at = now(), finished_at = CASE WHEN $10 THEN now() END
  WHERE table_name = $1`;

/** The refusals of a batch: $1 table, $2 job, $3 keys, $4 columns, $5 codes (index-aligned). */
export const RECORD_REFUSED_SQL = `INSERT INTO ${PROGRESS_SCHEMA}.refused (table_name, job, key, column_name, code)
  SELECT $1, $2::uuid, r.key, r.column_name, r.code FROM unnest($3::text[], $4::text[], $5::text[]) AS r(key, column_name, code)
  ON CONFLICT (job, key, column_name) DO UPDATE SET code = EXCLUDED.code`;

export const LIST_REFUSED_SQL = `SELECT key, column_name, code FROM ${PROGRESS_SCHEMA}.refused WHERE job = $1::uuid ORDER BY seq LIMIT $2`;

/** What one rewrap reads and writes. */
export interface RewrapTable {
  /** the qualified, quoted name (the catalog's quote_ident) */
  table: string;
  keyColumn: string;
  columns: readonly string[];
  /** the column naming each row's data subject (keys scoped to the subject), read as text */
  subjectColumn?: string;
}

/**
 * The next batch, locked: the key as text (its checkpoint and its report) and the columns as
 * v0, v1, … in key order. `after`: whether $1 is the last key done (as text, which the server
 * reads as the key column's type); $2 the batch size. ORDER BY names the table's column, not the
 * output: `ORDER BY id` would sort by the output column id::text.
 */
export function selectBatchSql(t: RewrapTable, after: boolean): string {
  const key = `t.${quoteIdent(t.keyColumn)}`;
  const values = t.columns.map((c, i) => `t.${quoteIdent(c)} AS v${i}`).join(', ');
  const subject = t.subjectColumn === undefined ? '' : `, t.${quoteIdent(t.subjectColumn)}::text AS veil_subject`;
  return `SELECT ${key}::text AS veil_key, ${values}${subject} FROM ${t.table} t${after ? ` WHERE ${key} > $1` : ''} ORDER BY ${key} LIMIT $${after ? 2 : 1} FOR UPDATE OF t`;
}

/**
 * The rows of a batch whose values changed, in one statement: $1 the keys as text, $2… each
 * column's values (index-aligned; a column left as stored carries its stored value), then the keys
 * again as $n, typed by the server from the key column (its index finds the rows). RETURNING says,
 * per row, whether what was stored is what was sent: a trigger that rewrote a value (veil's
 * protecting it again) shows as false, and the caller rolls the batch back.
 */
export function updateBatchSql(t: RewrapTable): string {
  const key = `t.${quoteIdent(t.keyColumn)}`;
  const n = t.columns.length;
  const arrays = ['$1::text[]', ...t.columns.map((_, i) => `$${i + 2}::text[]`)].join(', ');
  const names = ['k', ...t.columns.map((_, i) => `v${i}`)].join(', ');
  const set = t.columns.map((c, i) => `${quoteIdent(c)} = x.v${i}`).join(', ');
  const same = t.columns.map((c, i) => `t.${quoteIdent(c)} IS NOT DISTINCT FROM x.v${i}`).join(' AND ');
  return `UPDATE ${t.table} t SET ${set} FROM unnest(${arrays}) AS x(${names}) WHERE ${key} = ANY ($${n + 2}) AND ${key}::text = x.k RETURNING (${same}) AS same`;
}

/** Transaction-local: veil's trigger (and every trigger not ENABLE ALWAYS) does not fire. */
export const SKIP_TRIGGERS_SQL = 'SET LOCAL session_replication_role = replica';
