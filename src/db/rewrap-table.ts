import {
  COLUMNS_SQL,
  qualifiedName,
  TABLE_SQL,
  triggerMapping,
  triggerSubject,
  TRIGGERS_SQL,
  VEIL_TRIGGER,
  type RewrapTable,
  type TableName,
} from './rewrap-sql.ts';
import { DbFault } from './errors.ts';

/**
 * The table of a `veil db rewrap` (src/db/rewrap.ts), as the catalog describes it and checked
 * before anything is read: its key column, its protected columns and fields, veil's trigger, and
 * the column naming each row's data subject when its fields use keys scoped to the subject.
 */

/** What the runner needs of a database connection (node-postgres' Client has it). */
export interface SqlSession {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }>;
}

/** A protected column and the field whose keys protect it. */
export interface ColumnField {
  column: string;
  className: string;
  propertyName: string;
}

/** The table as the catalog describes it, checked for a rewrap. */
export interface RewrapTarget extends RewrapTable {
  fields: readonly ColumnField[];
  /** veil's trigger protects the table: the batches skip triggers (session_replication_role) */
  veilTrigger: boolean;
}

/** A table or option the rewrap cannot work with (DbFault REWRAP_REFUSED); the message names objects, never a value. */
export function rewrapRefused(why: string): DbFault {
  return new DbFault('REWRAP_REFUSED', why);
}

/**
 * Checks the table and resolves its columns: the key column is NOT NULL and alone in a unique
 * index (keyset pagination neither skips nor repeats a row), is not a protected column (it is
 * printed); the protected columns are text or varchar and in no foreign key (the batches skip
 * the triggers that check those); with veil's trigger, its mapping gives the columns when none
 * are named and must agree with those named, and it must not fire in replica mode (ENABLE
 * ALWAYS or REPLICA: a rewrap's UPDATE would be protected twice).
 */
export async function inspectTable(
  session: SqlSession,
  table: TableName,
  keyColumn: string,
  named: readonly ColumnField[] | undefined,
  namedSubject?: string,
): Promise<RewrapTarget> {
  const found = (await session.query(TABLE_SQL, [qualifiedName(table)])).rows[0] as { oid: string; name: string; kind: string } | undefined;
  if (!found) throw rewrapRefused('the table does not exist (or is not visible to this role)');
  if (found.kind !== 'r' && found.kind !== 'p') throw rewrapRefused(`${found.name} is not a table`);
  const columns = (await session.query(COLUMNS_SQL, [found.oid])).rows as {
    name: string;
    not_null: boolean;
    texty: boolean;
    type: string;
    unique_key: boolean;
    foreign_key: boolean;
  }[];
  const byName = new Map(columns.map((c) => [c.name, c]));
  const triggers = (await session.query(TRIGGERS_SQL, [found.oid, VEIL_TRIGGER])).rows as {
    relation: string;
    own: boolean;
    enabled: string;
    args: Uint8Array;
  }[];
  const always = triggers.find((t) => t.enabled === 'A' || t.enabled === 'R');
  if (always) {
    throw rewrapRefused(
      `veil's trigger on ${always.relation} is enabled ${always.enabled === 'A' ? 'ALWAYS' : 'REPLICA'}: it would protect the rewrapped values again; ALTER TABLE … ENABLE TRIGGER ${VEIL_TRIGGER} (the default) first`,
    );
  }
  const own = triggers.find((t) => t.own) ?? triggers[0];
  const mapping = own ? triggerMapping(own.args) : [];
  const fields = named ?? mapping;
  const subjectColumn = subjectColumnOf(own ? triggerSubject(own.args) : undefined, namedSubject, byName, fields);
  if (fields.length === 0)
    throw rewrapRefused(`${found.name} has no veil trigger to take its protected columns from: name them with --column column=Class.property`);

  const key = byName.get(keyColumn);
  if (!key) throw rewrapRefused(`${found.name} has no column ${keyColumn}`);
  if (!key.not_null || !key.unique_key)
    throw rewrapRefused(`the key column ${keyColumn} must be NOT NULL and the only column of a unique index (a primary key): batches go in its order`);
  if (mapping.some((m) => m.column === keyColumn) || fields.some((f) => f.column === keyColumn)) {
    throw rewrapRefused(`the key column ${keyColumn} is a protected column: choose a key the report may name`);
  }
  const seen = new Set<string>();
  for (const f of fields) {
    const c = byName.get(f.column);
    if (!c) throw rewrapRefused(`${found.name} has no column ${f.column}`);
    if (seen.has(f.column)) throw rewrapRefused(`column ${f.column} is named twice`);
    seen.add(f.column);
    if (!c.texty) throw rewrapRefused(`column ${f.column} is ${c.type}: protected values are text or varchar`);
    if (c.foreign_key)
      throw rewrapRefused(`column ${f.column} is part of a foreign key: a rewrap skips the triggers that check foreign keys, so it refuses such columns`);
    const mapped = mapping.find((m) => m.column === f.column);
    if (mapped && (mapped.className !== f.className || mapped.propertyName !== f.propertyName)) {
      throw rewrapRefused(`veil's trigger protects column ${f.column} as ${mapped.className}.${mapped.propertyName}, not ${f.className}.${f.propertyName}`);
    }
  }
  return {
    table: found.name,
    keyColumn,
    columns: fields.map((f) => f.column),
    fields,
    veilTrigger: triggers.length > 0,
    ...(subjectColumn ? { subjectColumn } : {}),
  };
}

/** The subject column: the trigger's (veil.attach_subject), or the one named, which must agree with it. */
function subjectColumnOf(
  attached: string | undefined,
  named: string | undefined,
  columns: ReadonlyMap<string, unknown>,
  fields: readonly ColumnField[],
): string | undefined {
  if (named !== undefined && attached !== undefined && named !== attached) {
    throw rewrapRefused(`veil's trigger reads the rows' subject from column ${attached}, not ${named}`);
  }
  const column = named ?? attached;
  if (column === undefined) return undefined;
  if (!columns.has(column)) throw rewrapRefused(`the table has no column ${column}`);
  if (fields.some((f) => f.column === column)) throw rewrapRefused(`the subject column ${column} is a protected column`);
  return column;
}
