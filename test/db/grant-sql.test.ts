import { describe, expect, it } from 'vitest';
import { grantSql, sqlLiteral } from '../../src/db/grant-sql.ts';

describe('veil db grant-* SQL', () => {
  it('passes names as SQL literals to the installer-only functions, which quote identifiers themselves', () => {
    const script = grantSql({ kind: 'grant-writer', role: "o'brien", table: 'public."Customers"', valuesPerMinute: 600 });
    expect(script).toContain(`SELECT veil.grant_writer('o''brien', 'public."Customers"'::regclass);`);
    expect(script).toContain(`SELECT veil.set_rate_limit('o''brien', 600);`);
    expect(grantSql({ kind: 'grant-reader', role: 'r', veilRole: 'support' })).toContain(`SELECT veil.grant_reader('r', 'support', NULL, NULL);`);
    expect(grantSql({ kind: 'grant-lookup', role: 'l' })).toContain(`SELECT veil.grant_lookup('l');`);
    expect(grantSql({ kind: 'revoke', role: 'w', table: 't' })).toContain(`SELECT veil.revoke_role('w', 't'::regclass);`);
    expect(grantSql({ kind: 'rate-limit', role: 'public', valuesPerMinute: null })).toContain(`SELECT veil.set_rate_limit('public', NULL);`);
    expect(grantSql({ kind: 'audit', records: 5 })).toContain('FROM veil.audit_log(5) r;');
  });

  it('refuses names that could end the script line and limits out of range', () => {
    expect(() => sqlLiteral('a\nSELECT 1')).toThrow('one line');
    expect(() => grantSql({ kind: 'grant-lookup', role: 'r', valuesPerMinute: 0 })).toThrow('from 1 to');
    expect(() => grantSql({ kind: 'rate-limit', role: 'r', valuesPerMinute: 1.5 })).toThrow('from 1 to');
    expect(() => grantSql({ kind: 'audit', records: 0 })).toThrow('--records');
  });
});
