/**
 * The SQL behind `veil db grant-writer | grant-reader | grant-lookup | revoke | rate-limit | audit`:
 * calls of the installer-only functions of schema veil (install-sql.ts), which quote identifiers
 * themselves (format('%I'), regclass). Names travel here as SQL string literals.
 */
export type GrantCommand =
  | { kind: 'grant-writer'; role: string; table: string; valuesPerMinute?: number }
  | { kind: 'grant-reader'; role: string; veilRole: string; table?: string; view?: string; valuesPerMinute?: number }
  | { kind: 'grant-lookup'; role: string; valuesPerMinute?: number }
  | { kind: 'revoke'; role: string; table?: string }
  | { kind: 'rate-limit'; role: string; valuesPerMinute: number | null }
  | { kind: 'audit'; records: number };

export const MAX_VALUES_PER_MINUTE = 1_000_000_000;

/** A standard SQL string literal (standard_conforming_strings is on since PostgreSQL 9.1). */
export function sqlLiteral(value: string): string {
  if (/[\0\r\n]/.test(value)) throw new Error('names must be one line without NUL');
  return `'${value.replaceAll("'", "''")}'`;
}

const regclass = (name: string | undefined) => (name === undefined ? 'NULL' : `${sqlLiteral(name)}::regclass`);

function limit(role: string, valuesPerMinute: number | null | undefined): string[] {
  if (valuesPerMinute === undefined) return [];
  if (valuesPerMinute !== null && (!Number.isInteger(valuesPerMinute) || valuesPerMinute < 1 || valuesPerMinute > MAX_VALUES_PER_MINUTE)) {
    throw new Error(`values per minute must be an integer from 1 to ${MAX_VALUES_PER_MINUTE}`);
  }
  return [`SELECT veil.set_rate_limit(${sqlLiteral(role)}, ${valuesPerMinute === null ? 'NULL' : valuesPerMinute});`];
}

/** The psql script of one command (run in one transaction). */
export function grantSql(c: GrantCommand): string {
  const statements: string[] = ['\\set QUIET on', '\\pset tuples_only on', '\\pset format unaligned'];
  switch (c.kind) {
    case 'grant-writer':
      statements.push(`SELECT veil.grant_writer(${sqlLiteral(c.role)}, ${regclass(c.table)});`, ...limit(c.role, c.valuesPerMinute));
      break;
    case 'grant-reader':
      statements.push(
        `SELECT veil.grant_reader(${sqlLiteral(c.role)}, ${sqlLiteral(c.veilRole)}, ${regclass(c.table)}, ${regclass(c.view)});`,
        ...limit(c.role, c.valuesPerMinute),
      );
      break;
    case 'grant-lookup':
      statements.push(`SELECT veil.grant_lookup(${sqlLiteral(c.role)});`, ...limit(c.role, c.valuesPerMinute));
      break;
    case 'revoke':
      statements.push(`SELECT veil.revoke_role(${sqlLiteral(c.role)}, ${regclass(c.table)});`);
      break;
    case 'rate-limit':
      statements.push(...limit(c.role, c.valuesPerMinute));
      break;
    case 'audit':
      if (!Number.isInteger(c.records) || c.records < 1 || c.records > 100_000) throw new Error('--records must be an integer from 1 to 100000');
      statements.push(`SELECT r::text FROM veil.audit_log(${c.records}) r;`);
      break;
  }
  // the function calls return void: print nothing for them
  return `${statements.map((s) => (s.startsWith('SELECT veil.') ? `\\o /dev/null\n${s}\n\\o` : s)).join('\n')}\n`;
}
