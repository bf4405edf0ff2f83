import { describe, expect, it } from 'vitest';
import { configureSql } from '../../src/db/configure-sql.ts';
import { splitPassword } from '../../src/db/psql.ts';

describe('veil db configure SQL', () => {
  const secret = 'se"cr,et-Ω';
  const script = configureSql({ veilUrl: 'http://veil:8080', clientId: 'db-client', clientSecret: secret, protectRole: 'ingest' });

  it('sends the credentials as COPY data, never in a statement', () => {
    const lines = script.split('\n');
    const copy = lines.indexOf('COPY veil_credentials_in FROM STDIN WITH (FORMAT csv);');
    expect(lines[copy + 2]).toBe('\\.');
    expect(lines[copy + 1]).toBe('"http://veil:8080","db-client","se""cr,et-Ω","ingest",,"5000"');
    const statements = lines.filter((_, i) => i !== copy + 1);
    expect(statements.join('\n')).not.toContain('cr,et');
    expect(script).toContain('SELECT veil.configure(veil_url, client_id, client_secret, protect_role, token_url, timeout_ms) FROM veil_credentials_in;');
  });

  it('refuses values that would break out of the COPY row, and non-http URLs', () => {
    expect(() => configureSql({ veilUrl: 'http://v', clientId: 'c', clientSecret: 'a\nb', protectRole: 'ingest' })).toThrow('clientSecret must be one line');
    expect(() => configureSql({ veilUrl: 'file:///etc', clientId: 'c', clientSecret: 's', protectRole: 'ingest' })).toThrow('http(s)');
  });

  it('moves a password out of the database URL (psql gets it as PGPASSWORD, not in argv)', () => {
    expect(splitPassword('postgres://app:p%40ss@db:5432/x?sslmode=require')).toEqual({ url: 'postgres://app@db:5432/x?sslmode=require', password: 'p@ss' });
    expect(splitPassword('postgres://app@db/x')).toEqual({ url: 'postgres://app@db/x' });
    expect(splitPassword('host=db user=app')).toEqual({ url: 'host=db user=app' });
  });
});
