import { readFileSync } from 'node:fs';
import { createPlPythonFunction, type EmbeddedModule, type PlPythonFunction } from './plpython-function.ts';

const source = (file: string) => readFileSync(new URL(`./plpython/${file}`, import.meta.url), 'utf8');

/** the guard (rate limit, audit), the trigger, the socket and its leases, the call bodies and the read views come first: Client builds on them */
export const CLIENT_MODULE: EmbeddedModule = {
  name: 'veil_client',
  source: ['veil_guard.py', 'veil_trigger.py', 'veil_socket.py', 'veil_lease.py', 'veil_requests.py', 'veil_reveal.py', 'veil_client.py']
    .map(source)
    .join('\n'),
  className: 'Client',
};
export const ADMIN_MODULE: EmbeddedModule = { name: 'veil_admin', source: source('veil_admin.py'), className: 'Admin' };

/**
 * What `veil db grant-reader` grants (besides USAGE on schema veil): unprotect with the veil role
 * mapped to the login role, and read views. Nothing is granted to PUBLIC.
 */
export const READER_FUNCTIONS = [
  'veil.unprotect(text, text, text)',
  'veil.unprotect_many(text, text, text[])',
  'veil.reveal(text[], text[], text[])',
  // with the values' data subject (a table's subject column, veil.attach_subject)
  'veil.unprotect(text, text, text, text)',
  'veil.unprotect_many(text, text, text[], text[])',
  'veil.reveal(text[], text[], text[], text)',
  'veil.session_stats()',
] as const;

/** What `veil db grant-lookup` grants: protect with the configured protect role (set-based work). */
export const LOOKUP_FUNCTIONS = [
  'veil.protect(text, text, text)',
  'veil.protect_many(text, text, text[])',
  'veil.protect(text, text, text, text)',
  'veil.protect_many(text, text, text[], text[])',
  'veil.session_stats()',
] as const;

/** Functions that PUBLIC held before `veil db install` stopped granting them (those without a subject). */
const ONCE_PUBLIC_NAMES = [
  'veil.unprotect(text, text, text)',
  'veil.unprotect_many(text, text, text[])',
  'veil.reveal(text[], text[], text[])',
  'veil.session_stats()',
  'veil.protect(text, text, text)',
  'veil.protect_many(text, text, text[])',
] as const;

/** What `veil db grant-writer` grants besides INSERT and UPDATE on the table: the trigger protects. */
export const WRITER_FUNCTIONS = ['veil.session_stats()'] as const;

/** revoked by name too (REVOKE ALL ON ALL FUNCTIONS covers the newer ones) */
const ONCE_PUBLIC = ONCE_PUBLIC_NAMES;

const client = (signature: string, returns: string, call: string): PlPythonFunction => ({
  signature,
  returns,
  module: CLIENT_MODULE,
  call: `return _m.run(lambda: ${call})`,
  definer: true,
});
const admin = (signature: string, returns: string, call: string): PlPythonFunction => ({
  signature,
  returns,
  module: ADMIN_MODULE,
  call: `return ${call}`,
  definer: false,
});

/**
 * The PL/Python functions. Those that call veil are SECURITY DEFINER: only they can read
 * veil.settings (the credentials); the administration functions run as their caller.
 */
export const PLPYTHON_FUNCTIONS: readonly PlPythonFunction[] = [
  client('veil.protect(class_name text, property_name text, value text)', 'text', '_m.protect_values("veil.protect", class_name, property_name, [value])[0]'),
  client(
    'veil.unprotect(class_name text, property_name text, value text)',
    'text',
    '_m.unprotect_values("veil.unprotect", class_name, property_name, [value])[0]',
  ),
  client(
    'veil.protect_many(class_name text, property_name text, vals text[])',
    'text[]',
    'None if vals is None else _m.protect_values("veil.protect_many", class_name, property_name, vals)',
  ),
  client(
    'veil.unprotect_many(class_name text, property_name text, vals text[])',
    'text[]',
    'None if vals is None else _m.unprotect_values("veil.unprotect_many", class_name, property_name, vals)',
  ),
  client('veil.reveal(class_names text[], property_names text[], vals text[])', 'text[]', '_m.reveal(class_names, property_names, vals)'),
  // the same with the values' data subject (keys scoped to the subject): read views of a table with a subject column call reveal so
  client(
    'veil.protect(class_name text, property_name text, value text, subject text)',
    'text',
    '_m.protect_values("veil.protect", class_name, property_name, [value], [subject])[0]',
  ),
  client(
    'veil.unprotect(class_name text, property_name text, value text, subject text)',
    'text',
    '_m.unprotect_values("veil.unprotect", class_name, property_name, [value], [subject])[0]',
  ),
  client(
    'veil.protect_many(class_name text, property_name text, vals text[], subjects text[])',
    'text[]',
    'None if vals is None else _m.protect_values("veil.protect_many", class_name, property_name, vals, subjects if subjects is not None else [None] * len(vals))',
  ),
  client(
    'veil.unprotect_many(class_name text, property_name text, vals text[], subjects text[])',
    'text[]',
    'None if vals is None else _m.unprotect_values("veil.unprotect_many", class_name, property_name, vals, subjects if subjects is not None else [None] * len(vals))',
  ),
  client(
    'veil.reveal(class_names text[], property_names text[], vals text[], subject text)',
    'text[]',
    '_m.reveal(class_names, property_names, vals, subject)',
  ),
  client('veil.protect_row()', 'trigger', '_m.protect_row(TD)'),
  client('veil.check_statement()', 'trigger', '_m.check_statement(TD)'),
  client('veil.session_stats()', 'jsonb', '__import__("json").dumps(_m.stats)'),
  client('veil.audit_log(max_records integer DEFAULT 1000)', 'SETOF jsonb', '_m.guard.tail(max(1, min(100000, max_records or 1000)))'),
  admin(
    'veil.attach(table_name regclass, column_name name, class_name text, property_name text)',
    'void',
    '_m.attach(table_name, column_name, class_name, property_name)',
  ),
  admin('veil.detach(table_name regclass, column_name name)', 'void', '_m.detach(table_name, column_name)'),
  admin('veil.attach_subject(table_name regclass, column_name name)', 'void', '_m.attach_subject(table_name, column_name)'),
  admin('veil.detach_subject(table_name regclass)', 'void', '_m.detach_subject(table_name)'),
  admin('veil.subject_column(table_name regclass)', 'text', '_m.subject_column(table_name)'),
  admin('veil.mapped_columns(table_name regclass)', 'TABLE(column_name text, class_name text, property_name text)', '_m.mapping(table_name)'),
  admin(
    'veil.create_read_view(table_name regclass, view_name name, view_schema name DEFAULT NULL)',
    'text',
    '_m.create_read_view(table_name, view_name, view_schema)',
  ),
];

const PREAMBLE = `-- veil database layer: schema veil (generated by \`veil db install\`; re-runnable).
-- Needs a superuser (plpython3u is an untrusted language). Apply in one transaction:
--   veil db install --apply --database-url postgres://...   or   psql -v ON_ERROR_STOP=1 -1 -f veil.sql
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS plpython3u;
CREATE SCHEMA IF NOT EXISTS veil;
-- Nothing of schema veil is PUBLIC's: veil db grant-writer / grant-reader / grant-lookup grant
-- USAGE and the functions each role needs (triggers fire without either).
REVOKE ALL ON SCHEMA veil FROM PUBLIC;

-- Where veil is and the database's client credentials. No grant to anyone: only the owner and
-- the SECURITY DEFINER functions below read it.
CREATE TABLE IF NOT EXISTS veil.settings (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  veil_url text NOT NULL CHECK (veil_url ~ '^https?://'),
  token_url text CHECK (token_url ~ '^https?://'),
  client_id text NOT NULL,
  client_secret text NOT NULL,
  protect_role text NOT NULL,
  timeout_ms integer NOT NULL DEFAULT 5000 CHECK (timeout_ms BETWEEN 100 AND 600000)
);
-- veil serve's Unix socket (VEIL_DB_SOCKET) on this host: Protect goes over it when set
-- (veil.configure_socket), Unprotect and the token endpoint stay on veil_url
ALTER TABLE veil.settings ADD COLUMN IF NOT EXISTS socket_path text
  CHECK (socket_path ~ '^/' AND pg_catalog.octet_length(socket_path) <= 107);
-- leased keys (veil.configure_socket(path, lease => true); docs/database.md "Leased keys"): the
-- trigger asks veil over the socket for the key of a field it may protect and protects locally
ALTER TABLE veil.settings ADD COLUMN IF NOT EXISTS socket_lease boolean NOT NULL DEFAULT false;
REVOKE ALL ON TABLE veil.settings FROM PUBLIC;
COMMENT ON TABLE veil.settings IS 'veil URL and client credentials; readable only by its owner and veil''s SECURITY DEFINER functions';

-- Which veil role unprotects for which database role (the login role, session_user; an exact
-- entry wins over one inherited through membership).
CREATE TABLE IF NOT EXISTS veil.role_map (
  db_role name PRIMARY KEY,
  veil_role text NOT NULL CHECK (veil_role ~ '^[A-Za-z][A-Za-z0-9_-]{0,63}$')
);
REVOKE ALL ON TABLE veil.role_map FROM PUBLIC;

-- How many values per minute each database role (session_user) may send veil through these
-- functions and the triggers together; db_role 'public' (which no role can be named) sets the
-- default for roles without a row, else 60000. Counted outside any transaction (veil_guard.py).
CREATE TABLE IF NOT EXISTS veil.rate_limits (
  db_role name PRIMARY KEY,
  values_per_minute integer NOT NULL CHECK (values_per_minute BETWEEN 1 AND 1000000000)
);
REVOKE ALL ON TABLE veil.rate_limits FROM PUBLIC;
`;

const SQL_FUNCTIONS = `
CREATE OR REPLACE FUNCTION veil.configure(veil_url text, client_id text, client_secret text, protect_role text,
  token_url text DEFAULT NULL, timeout_ms integer DEFAULT 5000)
RETURNS void LANGUAGE sql SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  INSERT INTO veil.settings AS s (id, veil_url, token_url, client_id, client_secret, protect_role, timeout_ms)
  VALUES (true, $1, $5, $2, $3, $4, $6)
  ON CONFLICT (id) DO UPDATE SET veil_url = EXCLUDED.veil_url, token_url = EXCLUDED.token_url,
    client_id = EXCLUDED.client_id, client_secret = EXCLUDED.client_secret,
    protect_role = EXCLUDED.protect_role, timeout_ms = EXCLUDED.timeout_ms;
$$;

-- lease: the trigger may protect with keys veil leases it (off unless said; a NULL path turns it off too)
DROP FUNCTION IF EXISTS veil.configure_socket(text);
CREATE OR REPLACE FUNCTION veil.configure_socket(socket_path text, lease boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  UPDATE veil.settings s SET socket_path = $1, socket_lease = $1 IS NOT NULL AND COALESCE($2, false);
  IF NOT FOUND THEN
    RAISE EXCEPTION 'veil: configure veil''s URL and credentials first (veil db configure)' USING ERRCODE = '55000';
  END IF;
END
$$;

CREATE OR REPLACE FUNCTION veil.map_role(db_role name, veil_role text)
RETURNS void LANGUAGE sql SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  INSERT INTO veil.role_map (db_role, veil_role) VALUES ($1, $2)
  ON CONFLICT ON CONSTRAINT role_map_pkey DO UPDATE SET veil_role = EXCLUDED.veil_role;
$$;

CREATE OR REPLACE FUNCTION veil.unmap_role(db_role name)
RETURNS void LANGUAGE sql SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ DELETE FROM veil.role_map m WHERE m.db_role = $1; $$;

CREATE OR REPLACE FUNCTION veil.set_rate_limit(db_role name, values_per_minute integer)
RETURNS void LANGUAGE sql SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  DELETE FROM veil.rate_limits l WHERE l.db_role = $1 AND $2 IS NULL;
  INSERT INTO veil.rate_limits (db_role, values_per_minute) SELECT $1, $2 WHERE $2 IS NOT NULL
  ON CONFLICT ON CONSTRAINT rate_limits_pkey DO UPDATE SET values_per_minute = EXCLUDED.values_per_minute;
$$;
${grantFunction(
  'veil.grant_writer(db_role name, table_name regclass)',
  `
  EXECUTE format('GRANT INSERT, UPDATE ON TABLE %s TO %I', $2, $1);
  -- a writer's statements carry cleartext: an error must not copy one into the server log
  EXECUTE format('ALTER ROLE %I IN DATABASE %I SET log_min_error_statement = panic', $1, current_database());`,
  WRITER_FUNCTIONS,
)}
${grantFunction(
  'veil.grant_reader(db_role name, veil_role text, table_name regclass DEFAULT NULL, view_name regclass DEFAULT NULL)',
  `
  PERFORM veil.map_role($1, $2);
  IF $3 IS NOT NULL THEN EXECUTE format('GRANT SELECT ON TABLE %s TO %I', $3, $1); END IF;
  IF $4 IS NOT NULL THEN EXECUTE format('GRANT SELECT ON TABLE %s TO %I', $4, $1); END IF;`,
  READER_FUNCTIONS,
)}
${grantFunction(
  'veil.grant_lookup(db_role name)',
  `
  -- a lookup's statements carry cleartext too
  EXECUTE format('ALTER ROLE %I IN DATABASE %I SET log_min_error_statement = panic', $1, current_database());`,
  LOOKUP_FUNCTIONS,
)}
CREATE OR REPLACE FUNCTION veil.revoke_role(db_role name, table_name regclass DEFAULT NULL)
RETURNS void LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  EXECUTE format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA veil FROM %I', $1);
  EXECUTE format('REVOKE ALL ON SCHEMA veil FROM %I', $1);
  IF $2 IS NOT NULL THEN EXECUTE format('REVOKE INSERT, UPDATE, SELECT ON TABLE %s FROM %I', $2, $1); END IF;
  PERFORM veil.unmap_role($1);
  PERFORM veil.set_rate_limit($1, NULL);
END
$$;
`;

/** An installer-only plpgsql function that grants a role USAGE on schema veil and `functions`, then runs `body`. */
function grantFunction(signature: string, body: string, functions: readonly string[]): string {
  return `CREATE OR REPLACE FUNCTION ${signature}
RETURNS void LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  EXECUTE format('GRANT USAGE ON SCHEMA veil TO %I', $1);
  EXECUTE format('GRANT EXECUTE ON FUNCTION ${functions.join(', ')} TO %I', $1);${body}
END
$$;
`;
}

const GRANTS = `
-- Functions are executable by PUBLIC by default: take that back from every function of the
-- schema, by name too for those an older install granted to PUBLIC (each install ends here, so
-- this covers every function it creates). Roles get what they need from veil.grant_writer, grant_reader and grant_lookup;
-- administration stays with the installer (GRANT EXECUTE on veil.attach and veil.protect_row to
-- a table owner who should attach triggers).
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA veil FROM PUBLIC;
${ONCE_PUBLIC.map((f) => `REVOKE ALL ON FUNCTION ${f} FROM PUBLIC;`).join('\n')}
`;

/** The whole install script: schema, restricted tables, functions and grants. */
export function installSql(): string {
  return [PREAMBLE, ...PLPYTHON_FUNCTIONS.map(createPlPythonFunction), SQL_FUNCTIONS, GRANTS].join('\n');
}
