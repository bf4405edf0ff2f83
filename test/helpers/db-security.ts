import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { ROOT } from './processes.ts';
import { databaseUrl, dropDatabase, psql, sql, startVeil, type PsqlRun, type VeilProcess } from './postgres.ts';

const run = promisify(execFile);

/** A database with schema veil installed and configured against its own `veil serve`, and login roles. */
export interface VeilDb<R extends string> {
  db: string;
  tag: string;
  veil: VeilProcess;
  role: Record<R, string>;
  /** psql that must succeed, as `user` (default the superuser) */
  on(script: string, user?: string): Promise<string[]>;
  /** psql that may fail: code, stdout, stderr (VERBOSITY=verbose: every field of an error) */
  attempt(script: string, user?: string): Promise<PsqlRun>;
  /** bin/veil with the database's URL in VEIL_PG_URL */
  cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  configure(protectRole?: string): Promise<void>;
  /** the database's audit records (veil.audit_log) of one database role, oldest first */
  audit(dbRole: string): Promise<AuditRecord[]>;
  close(): Promise<void>;
}

export interface AuditRecord {
  database: string;
  dbRole: string;
  function: string;
  action: string;
  table?: string;
  instances: number;
  outcome: 'ok' | 'refused' | 'failed';
  code?: string;
  fields: { className: string; propertyName: string; count: number }[];
}

/** `socket`: veil serve also listens on VEIL_DB_SOCKET and the database protects over it (veil.configure_socket). */
export async function veilDb<R extends string>(
  label: string,
  roles: readonly R[],
  options: { socket?: boolean; env?: Record<string, string> } = {},
): Promise<VeilDb<R>> {
  const tag = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const db = `veil_${label}_${tag}`;
  const role = Object.fromEntries(roles.map((r) => [r, `${r}_${tag}`])) as Record<R, string>;
  const veil = await startVeil(options);
  const cli = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await run(join(ROOT, 'bin/veil'), args, { env: { ...process.env, VEIL_PG_URL: databaseUrl(db) }, maxBuffer: 256 << 20 });
      return { code: 0, stdout, stderr };
    } catch (e) {
      const failed = e as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  };
  const must = async (...args: string[]) => {
    const r = await cli(...args);
    if (r.code !== 0) throw new Error(`veil ${args.join(' ')}: ${r.stderr}`);
    return r;
  };
  const configure = async (protectRole = 'ingest') => {
    await must('db', 'configure', '--veil-url', veil.url, '--client-id', 'veil-dev', '--client-secret-file', veil.secretFile, '--protect-role', protectRole);
    if (veil.socketPath) await sql(`SELECT veil.configure_socket('${veil.socketPath}')`, { database: db });
  };
  await sql(
    `CREATE DATABASE ${db};\n${Object.values<string>(role)
      .map((r) => `CREATE ROLE ${r} LOGIN;`)
      .join('\n')}`,
  );
  await must('db', 'install', '--apply');
  await configure();
  const on = (script: string, user = 'postgres') => sql(script, { database: db, user });
  return {
    db,
    tag,
    veil,
    role,
    on,
    cli,
    configure,
    attempt: (script: string, user = 'postgres') => psql(script, { database: db, user }),
    async audit(dbRole: string) {
      const lines = await on(`SELECT r::text FROM veil.audit_log(100000) r WHERE r->>'dbRole' = '${dbRole}' AND r->>'database' = '${db}'`);
      return lines.map((l) => JSON.parse(l) as AuditRecord);
    },
    async close() {
      await dropDatabase(db, Object.values<string>(role));
      await veil.close();
    },
  };
}

/** A distinctive cleartext for scans: nothing else in a log or an error could hold it by chance. */
export const marker = (what: string) => `${what}-${randomBytes(6).toString('hex')}`;

/**
 * The customers table the trigger tests write through: email and name (and with `card`, a card
 * column) attached to Customer's fields, the writer granted to write (and read back), the reader
 * to unprotect as `fraud`.
 */
export function customersTable(t: VeilDb<'writer' | 'reader'>, options: { card?: boolean } = {}): string {
  const cardColumn = options.card ? 'card text, ' : '';
  const attachCard = options.card ? "\n    SELECT veil.attach('customers', 'card', 'Customer', 'cardNumber');" : '';
  return `
    CREATE TABLE customers (id int PRIMARY KEY, email text, name text, ${cardColumn}visits int NOT NULL DEFAULT 0);
    SELECT veil.attach('customers', 'email', 'Customer', 'email');
    SELECT veil.attach('customers', 'name', 'Customer', 'name');${attachCard}
    SELECT veil.grant_writer('${t.role.writer}', 'customers');
    GRANT SELECT ON customers TO ${t.role.writer};
    SELECT veil.grant_reader('${t.role.reader}', 'fraud', 'customers');`;
}

/** What the reader gets back from the stored email and name of the rows `ids`: `id|email|name`, by id. */
export function clearCustomers(t: VeilDb<'writer' | 'reader'>, ids: number[]): Promise<string[]> {
  return t.on(
    `SELECT id, veil.unprotect('Customer', 'email', email), veil.unprotect('Customer', 'name', name) FROM customers WHERE id IN (${ids.join(', ')}) ORDER BY id`,
    t.role.reader,
  );
}

/**
 * The writer's rate limit holds on a trigger: with a limit of 4 values a minute, a statement
 * writing 10 rows (ids `from` to `from + 9`) fails with DB_RATE_LIMITED, its error quoting no
 * value, and no row is written; the limit is lifted after.
 */
export async function expectRateLimitHolds(t: VeilDb<'writer' | 'reader'>, from: number): Promise<void> {
  await t.on(`SELECT veil.set_rate_limit('${t.role.writer}', 4)`);
  const secret = marker('rate');
  const r = await t.attempt(
    `INSERT INTO customers (id, email, name) SELECT g, '${secret}' || g, 'n' FROM generate_series(${from}, ${from + 9}) g;`,
    t.role.writer,
  );
  expect(r.code).not.toBe(0);
  expect(r.stderr).toContain('DB_RATE_LIMITED');
  expect(r.stderr).not.toContain(secret);
  expect(await t.on(`SELECT count(*) FROM customers WHERE id BETWEEN ${from} AND ${from + 9}`)).toEqual(['0']);
  await t.on(`SELECT veil.set_rate_limit('${t.role.writer}', NULL)`);
}
