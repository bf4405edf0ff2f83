import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { configureSql, grantSql, installSql, runPsql, type GrantCommand } from '../db/index.ts';
import { dbCheckCommand } from './db-check.ts';
import { dbRewrapCommand, rewrapHelp } from './db-rewrap.ts';
import { usageExitCode, type CliIo, type Command } from './io.ts';

export const dbHelp = `Usage: veil db install [--apply] [--database-url URL]
       veil db configure --veil-url URL --client-id ID --client-secret-file F [--protect-role ROLE]
                         [--token-url URL] [--timeout-ms N] [--socket PATH|none [--socket-lease]]
                         [--database-url URL]
       veil db grant-writer --role R --table T [--values-per-minute N]
       veil db grant-reader --role R --veil-role V [--table T] [--view V] [--values-per-minute N]
       veil db grant-lookup --role R [--values-per-minute N]
       veil db revoke --role R [--table T]
       veil db rate-limit --role R|public --values-per-minute N|default
       veil db audit [--records N]
       veil db rewrap --table T --key-column C --role R [--column C=Class.property ...] [--subject-column C] [--batch N]
                      [--restart] [--database-url URL] [--config F] [--data-dir D]
       veil db check [--table T ...] [--sample N] [--min-share S] [--json] [--database-url URL]

install: prints the SQL of schema veil (PL/Python functions veil.protect, veil.unprotect, their
  _many array variants, the trigger generator veil.attach, the subject column veil.attach_subject,
  read views veil.create_read_view);
  with --apply runs it through psql in one transaction (needs a superuser: plpython3u).
configure: stores veil's URL and the database's client credentials in veil.settings, which only
  veil's SECURITY DEFINER functions read. The secret is read from a file ('-' for stdin) and sent
  as COPY data, never printed or put on a command line. --protect-role (default ingest) is the
  veil role every writer protects with. --socket: veil serve's Unix socket (VEIL_DB_SOCKET) as the
  database server sees it, for Protect ('none' goes back to HTTP; absent: left as it is);
  --socket-lease: the trigger may protect with keys veil leases (veil also needs
  VEIL_DB_SOCKET_LEASES=on) — it changes the threat model: docs/database.md, "Leased keys".
grant-writer: INSERT and UPDATE on the table (its trigger protects; no veil function), and
  log_min_error_statement = panic for the role in this database, so the server log never copies
  a failing statement with its cleartext. Upserts also need SELECT on the columns they read.
grant-reader: maps the role to a veil role; veil.unprotect, unprotect_many and reveal; SELECT on
  the table (read views run with the reader's privileges: its RLS policies and column
  privileges hold) and on the view.
grant-lookup: veil.protect and protect_many (lookups by a deterministic protected value).
  Nothing is granted to PUBLIC. revoke: takes back what these granted (and the table's INSERT,
  UPDATE, SELECT with --table).
rate-limit: values per minute the role (the login, session_user) may send veil through the
  functions and triggers together; role public sets the default (60000); 'default' removes the
  role's own limit. Over it, calls fail with DB_RATE_LIMITED.
audit: prints the last records (JSON lines) of the database's audit log: one per call to veil,
  with the database role, function, table, fields and counts, outcome; never a value.
rewrap: after 'veil keys rotate', re-protects a table's protected columns under the primary key
  versions, in this process (--config, --data-dir), in batches that each commit with a checkpoint
  in veil_rewrap.progress: a killed run resumes. Values it cannot re-protect are left as stored
  and reported by key and column. Exit 3 when some were. 'veil db rewrap --help' tells more.
check: after a migration, samples the tables with attached columns and reports the unattached
  text and JSON columns (and paths inside JSON) that hold personal data: names, kinds, counts,
  never a value. Exit 0 clean, 3 findings, 1 error. 'veil db check --help' tells more.
  --database-url  default $VEIL_PG_URL, else $DATABASE_URL; a password in it goes to psql as PGPASSWORD
  psql comes from $VEIL_PSQL, else PATH. See docs/database.md.
`;

export const dbCommand: Command = async (args, io) => {
  // rewrap and check have options of their own (and connect with node-postgres; the others run psql)
  if (args[0] === 'rewrap') return dbRewrapCommand(args.slice(1), io, rewrapHelp);
  if (args[0] === 'check') return dbCheckCommand(args.slice(1), io);
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        apply: { type: 'boolean' },
        'database-url': { type: 'string' },
        'veil-url': { type: 'string' },
        'token-url': { type: 'string' },
        'client-id': { type: 'string' },
        'client-secret-file': { type: 'string' },
        'protect-role': { type: 'string' },
        'timeout-ms': { type: 'string' },
        role: { type: 'string' },
        table: { type: 'string' },
        view: { type: 'string' },
        'veil-role': { type: 'string' },
        'values-per-minute': { type: 'string' },
        records: { type: 'string' },
        socket: { type: 'string' },
        'socket-lease': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    io.stderr(`veil db: ${(e as Error).message}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  const sub = positionals[0];
  if (values.help || sub === undefined || !SUBCOMMANDS.has(sub) || positionals.length > 1) {
    io.stdout(dbHelp);
    return usageExitCode(values.help === true, sub, (s) => SUBCOMMANDS.has(s));
  }
  if (sub === 'rewrap' || sub === 'check') {
    io.stderr(`veil db ${sub}: its options go after the word ${sub}\n`);
    return 2;
  }
  if (sub !== 'install' && sub !== 'configure') return grant(sub, values, io);
  if (sub === 'install') {
    if (!values.apply) {
      io.stdout(installSql());
      return 0;
    }
    return apply('install', installSql(), values['database-url'], io);
  }
  return configure(values, io);
};

/** A grant-like subcommand (grant-*, revoke, rate-limit, audit): its options checked, its SQL run through psql. */
async function grant(sub: string, values: GrantOptions & { 'database-url'?: string }, io: CliIo): Promise<number> {
  let script: string;
  try {
    script = grantSql(grantCommand(sub, values));
  } catch (e) {
    io.stderr(`veil db ${sub}: ${(e as Error).message}\n`);
    return 2;
  }
  return apply(sub, script, values['database-url'], io);
}

type ConfigureOptions = Partial<
  Record<'veil-url' | 'client-id' | 'client-secret-file' | 'timeout-ms' | 'socket' | 'token-url' | 'protect-role' | 'database-url', string>
> & { 'socket-lease'?: boolean };

/** `veil db configure`: the options checked and the secret read from its file (never the command line), then the settings stored through psql. */
async function configure(values: ConfigureOptions, io: CliIo): Promise<number> {
  const veilUrl = values['veil-url'];
  const clientId = values['client-id'];
  const secretFile = values['client-secret-file'];
  if (!veilUrl || !clientId || !secretFile) {
    io.stderr('veil db configure: needs --veil-url, --client-id and --client-secret-file\n');
    return 2;
  }
  const timeoutMs = values['timeout-ms'] === undefined ? undefined : Number(values['timeout-ms']);
  if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 600_000)) {
    io.stderr('veil db configure: --timeout-ms must be an integer from 100 to 600000\n');
    return 2;
  }
  const socket = values.socket === 'none' ? '' : values.socket;
  if (values['socket-lease'] && !socket) {
    io.stderr('veil db configure: --socket-lease needs --socket PATH (leases go over the local socket)\n');
    return 2;
  }
  let secret: string;
  try {
    secret = (secretFile === '-' ? await io.readStdin() : await readFile(resolve(io.cwd, secretFile), 'utf8')).replace(/\r?\n$/, '');
  } catch {
    io.stderr('veil db configure: cannot read the client secret file\n');
    return 1;
  }
  let script: string;
  try {
    script = configureSql({
      veilUrl,
      clientId,
      clientSecret: secret,
      protectRole: values['protect-role'] ?? 'ingest',
      ...(values['token-url'] ? { tokenUrl: values['token-url'] } : {}),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(socket === undefined ? {} : { socketPath: socket, socketLease: values['socket-lease'] === true }),
    });
  } catch (e) {
    io.stderr(`veil db configure: ${(e as Error).message}\n`);
    return 2;
  }
  return apply('configure', script, values['database-url'], io);
}

const SUBCOMMANDS = new Set(['install', 'configure', 'grant-writer', 'grant-reader', 'grant-lookup', 'revoke', 'rate-limit', 'audit', 'rewrap', 'check']);

type GrantOptions = Partial<Record<'role' | 'table' | 'view' | 'veil-role' | 'values-per-minute' | 'records', string>>;

/** The options of a grant-like subcommand as a GrantCommand; throws with the missing option's name. */
function grantCommand(sub: string, o: GrantOptions): GrantCommand {
  const need = (name: keyof GrantOptions): string => {
    const v = o[name];
    if (v === undefined || v === '') throw new Error(`needs --${name}`);
    return v;
  };
  const perMinute = (raw: string | undefined): number | undefined => {
    if (raw === undefined) return undefined;
    if (!/^\d{1,10}$/.test(raw)) throw new Error('--values-per-minute must be a positive integer');
    return Number(raw);
  };
  const table = o.table === undefined ? {} : { table: o.table };
  const limit = (): { valuesPerMinute?: number } => (o['values-per-minute'] === undefined ? {} : { valuesPerMinute: perMinute(o['values-per-minute'])! });
  switch (sub) {
    case 'grant-writer':
      return { kind: 'grant-writer', role: need('role'), table: need('table'), ...limit() };
    case 'grant-reader':
      return { kind: 'grant-reader', role: need('role'), veilRole: need('veil-role'), ...table, ...(o.view === undefined ? {} : { view: o.view }), ...limit() };
    case 'grant-lookup':
      return { kind: 'grant-lookup', role: need('role'), ...limit() };
    case 'revoke':
      return { kind: 'revoke', role: need('role'), ...table };
    case 'rate-limit': {
      const raw = need('values-per-minute');
      return { kind: 'rate-limit', role: need('role'), valuesPerMinute: raw === 'default' ? null : perMinute(raw)! };
    }
    default: {
      const records = o.records === undefined ? 100 : Number(o.records);
      return { kind: 'audit', records };
    }
  }
}

async function apply(what: string, script: string, given: string | undefined, io: CliIo): Promise<number> {
  const databaseUrl = given ?? io.env.VEIL_PG_URL ?? io.env.DATABASE_URL;
  if (!databaseUrl) {
    io.stderr(`veil db ${what}: needs --database-url (or $VEIL_PG_URL or $DATABASE_URL)\n`);
    return 2;
  }
  try {
    const result = await runPsql(databaseUrl, script, { env: { ...io.env }, ...(io.env.VEIL_PSQL ? { psql: io.env.VEIL_PSQL } : {}) });
    // psql's messages name statements and objects; the configure script's values are COPY data,
    // which psql does not echo
    if (result.stderr) io.stderr(result.stderr);
    if (what === 'audit') io.stdout(result.stdout);
    if (result.code !== 0) {
      io.stderr(`veil db ${what}: psql failed (exit ${result.code}); nothing was changed (one transaction)\n`);
      return 1;
    }
    if (what !== 'audit') io.stderr(`veil db ${what}: done\n`);
    return 0;
  } catch (e) {
    io.stderr(`veil db ${what}: cannot run psql (${(e as NodeJS.ErrnoException).code ?? 'error'})\n`);
    return 1;
  }
}
