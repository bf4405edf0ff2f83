import { describe, expect, it } from 'vitest';
import {
  checkColumnName,
  parseTableName,
  qualifiedName,
  quoteIdent,
  selectBatchSql,
  triggerMapping,
  triggerSubject,
  updateBatchSql,
  type RewrapTable,
} from '../../src/db/rewrap-sql.ts';

/** veil db rewrap's SQL: names checked before any statement is built, and quoted in it. */
const HOSTILE = [
  'customers; DROP TABLE customers',
  'customers"; DROP TABLE x; --',
  "o'brien",
  'a b',
  '',
  '1abc',
  'x'.repeat(64),
  'naïve',
  'tab\tle',
  'a\0b',
  'a.b.c',
  '.a',
  'a.',
  '$x',
];

describe('veil db rewrap: names', () => {
  it('takes table and schema.table of SQL identifiers and quotes each part', () => {
    expect(parseTableName('customers')).toEqual({ name: 'customers' });
    expect(parseTableName('crm.Customers_2$')).toEqual({ schema: 'crm', name: 'Customers_2$' });
    expect(qualifiedName(parseTableName('crm.Customers_2$'))).toBe('"crm"."Customers_2$"');
    expect(qualifiedName({ name: '_t' })).toBe('"_t"');
    expect(parseTableName('x'.repeat(63)).name).toHaveLength(63);
  });

  it.each(HOSTILE)('refuses %j as a table or column name, without repeating it', (name) => {
    for (const check of [() => parseTableName(name), () => checkColumnName(name, '--column')]) {
      let message = '';
      try {
        check();
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message, name).not.toBe('');
      if (name.length > 2) expect(message).not.toContain(name);
    }
  });

  it('quoteIdent doubles a double quote and refuses NUL and the empty name', () => {
    expect(quoteIdent('a"b')).toBe('"a""b"');
    expect(quoteIdent('x"; DROP TABLE t; --')).toBe('"x""; DROP TABLE t; --"');
    expect(() => quoteIdent('')).toThrow();
    expect(() => quoteIdent('a\0')).toThrow();
  });
});

describe('veil db rewrap: batch statements', () => {
  const t: RewrapTable = { table: 'crm."Customers"', keyColumn: 'id', columns: ['email', 'Full$Name'] };

  it("selects a batch in key order, locked, after the last key (a parameter), ordered by the table's column", () => {
    expect(selectBatchSql(t, false)).toBe(
      'SELECT t."id"::text AS veil_key, t."email" AS v0, t."Full$Name" AS v1 FROM crm."Customers" t ORDER BY t."id" LIMIT $1 FOR UPDATE OF t',
    );
    expect(selectBatchSql(t, true)).toBe(
      'SELECT t."id"::text AS veil_key, t."email" AS v0, t."Full$Name" AS v1 FROM crm."Customers" t WHERE t."id" > $1 ORDER BY t."id" LIMIT $2 FOR UPDATE OF t',
    );
  });

  it('updates the changed rows in one statement of parameters, and returns whether each was stored as written', () => {
    expect(updateBatchSql(t)).toBe(
      'UPDATE crm."Customers" t SET "email" = x.v0, "Full$Name" = x.v1 FROM unnest($1::text[], $2::text[], $3::text[]) AS x(k, v0, v1) ' +
        'WHERE t."id" = ANY ($4) AND t."id"::text = x.k RETURNING (t."email" IS NOT DISTINCT FROM x.v0 AND t."Full$Name" IS NOT DISTINCT FROM x.v1) AS same',
    );
  });

  it('a column name that got past the checks still cannot leave its quotes', () => {
    const odd: RewrapTable = { table: '"t"', keyColumn: 'k"; DROP TABLE t; --', columns: ['c"--'] };
    const sql = `${selectBatchSql(odd, true)}\n${updateBatchSql(odd)}`;
    expect(sql).toContain('"k""; DROP TABLE t; --"');
    expect(sql).toContain('"c""--"');
    expect(sql.replaceAll(/"(?:[^"]|"")*"/g, '')).not.toMatch(/DROP|--/);
  });
});

describe("veil db rewrap: the trigger's mapping", () => {
  it('reads (column, class, property) triples from pg_trigger.tgargs', () => {
    const args = Buffer.from('email\0Customer\0email\0full name\0Customer\0name\0', 'utf8');
    expect(triggerMapping(args)).toEqual([
      { column: 'email', className: 'Customer', propertyName: 'email' },
      { column: 'full name', className: 'Customer', propertyName: 'name' },
    ]);
    expect(triggerMapping(Buffer.alloc(0))).toEqual([]);
    expect(triggerSubject(args)).toBeUndefined();
  });

  it('reads the subject column (veil.attach_subject) apart from the protected columns', () => {
    const args = Buffer.from('customer_id\0@subject\0\0email\0Customer\0email\0', 'utf8');
    expect(triggerMapping(args)).toEqual([{ column: 'email', className: 'Customer', propertyName: 'email' }]);
    expect(triggerSubject(args)).toBe('customer_id');
  });

  it("selects each row's subject as text when the table names a subject column", () => {
    const t: RewrapTable = { table: '"t"', keyColumn: 'id', columns: ['email'], subjectColumn: 'who' };
    expect(selectBatchSql(t, false)).toBe(
      'SELECT t."id"::text AS veil_key, t."email" AS v0, t."who"::text AS veil_subject FROM "t" t ORDER BY t."id" LIMIT $1 FOR UPDATE OF t',
    );
  });
});
