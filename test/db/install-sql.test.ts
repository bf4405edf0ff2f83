import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOG } from '../../src/errors/catalog.ts';
import { ADMIN_MODULE, CLIENT_MODULE, installSql, LOOKUP_FUNCTIONS, PLPYTHON_FUNCTIONS, READER_FUNCTIONS, WRITER_FUNCTIONS } from '../../src/db/install-sql.ts';
import { DOLLAR_TAG, plPythonBody } from '../../src/db/plpython-function.ts';

const script = installSql();
/** CREATE FUNCTION statements: name, argument types, and the text up to AS */
const functions = [...script.matchAll(/CREATE OR REPLACE FUNCTION (veil\.\w+)\(([^)]*)\)([\s\S]*?)\nAS /g)].map((m) => ({
  name: m[1]!,
  types: m[2]!
    .split(',')
    .map((a) =>
      a
        .trim()
        .replace(/ DEFAULT .*$/, '')
        .split(/\s+/)
        .slice(1)
        .join(' '),
    )
    .filter(Boolean),
  header: m[3]!,
}));

describe('veil db install SQL', () => {
  it('creates schema veil, its restricted tables and every function once (overloads by argument types)', () => {
    expect(script).toContain('CREATE SCHEMA IF NOT EXISTS veil;');
    expect(script).toContain('CREATE EXTENSION IF NOT EXISTS plpython3u;');
    const names = functions.map((f) => f.name);
    const signatures = functions.map((f) => `${f.name}(${f.types.join(', ')})`);
    expect(new Set(signatures).size).toBe(signatures.length);
    for (const name of [
      'veil.protect',
      'veil.unprotect',
      'veil.protect_many',
      'veil.unprotect_many',
      'veil.reveal',
      'veil.protect_row',
      'veil.attach',
      'veil.detach',
      'veil.create_read_view',
      'veil.configure',
      'veil.map_role',
      'veil.unmap_role',
      'veil.check_statement',
      'veil.audit_log',
      'veil.grant_writer',
      'veil.grant_reader',
      'veil.grant_lookup',
      'veil.revoke_role',
      'veil.set_rate_limit',
      'veil.attach_subject',
      'veil.detach_subject',
      'veil.subject_column',
    ])
      expect(names).toContain(name);
    // the subject-taking overloads (keys scoped to the data subject) beside the older ones
    for (const signature of [
      'veil.protect(text, text, text, text)',
      'veil.unprotect(text, text, text, text)',
      'veil.protect_many(text, text, text[], text[])',
      'veil.unprotect_many(text, text, text[], text[])',
      'veil.reveal(text[], text[], text[], text)',
    ])
      expect(signatures).toContain(signature);
  });

  it('keeps the credentials table and the role map from PUBLIC, and grants no table to anyone', () => {
    expect(script).toContain('REVOKE ALL ON TABLE veil.settings FROM PUBLIC;');
    expect(script).toContain('REVOKE ALL ON TABLE veil.role_map FROM PUBLIC;');
    expect(script).toContain('REVOKE ALL ON TABLE veil.rate_limits FROM PUBLIC;');
    expect(script).not.toMatch(/GRANT [A-Z, ]+ ON (TABLE )?veil\.(settings|role_map|rate_limits)/);
  });

  it('pins search_path on every SECURITY DEFINER function', () => {
    const definers = functions.filter((f) => f.header.includes('SECURITY DEFINER'));
    expect([...new Set(definers.map((f) => f.name))].sort()).toEqual([
      'veil.audit_log',
      'veil.check_statement',
      'veil.protect',
      'veil.protect_many',
      'veil.protect_row',
      'veil.reveal',
      'veil.session_stats',
      'veil.unprotect',
      'veil.unprotect_many',
    ]);
    for (const f of definers) expect(f.header, f.name).toContain('SET search_path = pg_catalog, pg_temp');
  });

  it('grants nothing to PUBLIC: takes EXECUTE back on every function (by name for those once granted) and USAGE on the schema', () => {
    expect(script).not.toMatch(/^\s*GRANT [^;]*\bTO PUBLIC\b/im);
    expect(script).toContain('REVOKE ALL ON SCHEMA veil FROM PUBLIC;');
    const revoke = script.indexOf('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA veil FROM PUBLIC;');
    expect(revoke).toBeGreaterThan(script.lastIndexOf('CREATE OR REPLACE FUNCTION'));
    for (const f of [
      'veil.protect(text, text, text)',
      'veil.protect_many(text, text, text[])',
      'veil.unprotect(text, text, text)',
      'veil.unprotect_many(text, text, text[])',
      'veil.reveal(text[], text[], text[])',
    ]) {
      expect(script.indexOf(`REVOKE ALL ON FUNCTION ${f} FROM PUBLIC;`), f).toBeGreaterThan(revoke);
    }
  });

  it('the grant functions grant only functions that exist with those argument types; writers get no protect, readers no protect, lookups no unprotect', () => {
    for (const grant of [...READER_FUNCTIONS, ...LOOKUP_FUNCTIONS, ...WRITER_FUNCTIONS]) {
      const [, name, args] = /^(veil\.\w+)\((.*)\)$/.exec(grant)!;
      expect(
        functions.some((f) => f.name === name && f.types.join(', ') === args),
        grant,
      ).toBe(true);
    }
    expect(WRITER_FUNCTIONS.join()).not.toMatch(/protect/);
    expect(READER_FUNCTIONS.join()).not.toMatch(/veil\.protect/);
    expect(LOOKUP_FUNCTIONS.join()).not.toMatch(/unprotect|reveal/);
    for (const admin of ['veil.configure', 'veil.map_role', 'veil.attach', 'veil.create_read_view', 'veil.audit_log', 'veil.set_rate_limit']) {
      expect([...READER_FUNCTIONS, ...LOOKUP_FUNCTIONS, ...WRITER_FUNCTIONS].join()).not.toContain(`${admin}(`);
    }
    const writer = script.slice(script.indexOf('FUNCTION veil.grant_writer'), script.indexOf('FUNCTION veil.grant_reader'));
    expect(writer).toContain('SET log_min_error_statement = panic');
  });

  it("read views run with the reader's privileges (security_invoker), and attach adds the statement trigger that raises deferred failures", () => {
    expect(ADMIN_MODULE.source).toContain('WITH (security_invoker = true) AS SELECT');
    expect(ADMIN_MODULE.source).toMatch(/AFTER INSERT OR UPDATE ON ' \+ table \+\s+' FOR EACH STATEMENT EXECUTE FUNCTION veil\.check_statement\(\)/);
  });

  it('embeds Python that compiles, inside dollar quotes it cannot close', () => {
    expect(script.split(DOLLAR_TAG).length - 1).toBe(PLPYTHON_FUNCTIONS.length * 2);
    for (const fn of PLPYTHON_FUNCTIONS) {
      // PL/Python wraps a body in a function; compile it the same way
      const wrapped = `def body():\n${plPythonBody(fn)
        .split('\n')
        .map((l) => `    ${l}`)
        .join('\n')}\n`;
      execFileSync('python3', ['-c', 'import sys; compile(sys.stdin.read(), "body", "exec")'], { input: wrapped });
    }
    for (const module of [CLIENT_MODULE, ADMIN_MODULE]) {
      execFileSync('python3', ['-c', 'import sys; compile(sys.stdin.read(), "m", "exec")'], { input: module.source });
    }
  });

  it('raises only codes of the error catalog (docs/errors.md)', () => {
    const codes = new Set(
      [...CLIENT_MODULE.source.matchAll(/VeilFailure\('([A-Z_]+)'/g), ...CLIENT_MODULE.source.matchAll(/^ {4}'([A-Z_]+)': '/gm)].map((m) => m[1]!),
    );
    expect(codes.size).toBeGreaterThan(5);
    for (const code of codes) expect(Object.keys(ERROR_CATALOG), code).toContain(code);
  });

  it('never formats a value into a message: failures are built from codes, titles and field names', () => {
    // the values the client handles are named value/values/v/item; none is concatenated into a message
    expect(CLIENT_MODULE.source).not.toMatch(/(error|VeilFailure|unavailable)\([^)]*\b(value|values|item|v)\b\s*[+%]/);
    expect(CLIENT_MODULE.source).not.toMatch(/str\(e\)|repr\(e\)|%s' % e\b/);
  });
});
