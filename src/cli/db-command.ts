import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { configureSql } from '../db/configure-sql.ts';
import { installSql } from '../db/install-sql.ts';
import { runPsql } from '../db/psql.ts';
import type { CliIo, Command } from './io.ts';

export const dbHelp = `Usage: veil db install [--apply] [--database-url URL]
       veil db configure --veil-url URL --client-id ID --client-secret-file F [--protect-role ROLE]
                         [--token-url URL] [--timeout-ms N] [--database-url URL]

install: prints the SQL of schema veil (PL/Python functions veil.protect, veil.unprotect, their
  _many array variants, the trigger generator veil.attach, read views veil.create_read_view);
  with --apply runs it through psql in one transaction (needs a superuser: plpython3u).
configure: stores veil's URL and the database's client credentials in veil.settings, which only
  veil's SECURITY DEFINER functions read. The secret is read from a file ('-' for stdin) and sent
  as COPY data, never printed or put on a command line. --protect-role (default ingest) is the
  veil role every writer protects with.
  --database-url  default $VEIL_PG_URL, else $DATABASE_URL; a password in it goes to psql as PGPASSWORD
  psql comes from $VEIL_PSQL, else PATH. See README "Database layer".
`;

export const dbCommand: Command = async (args, io) => {
  let parsed;
  try {
    parsed = parseArgs({
      args, allowPositionals: true,
      options: {
        apply: { type: 'boolean' }, 'database-url': { type: 'string' }, 'veil-url': { type: 'string' }, 'token-url': { type: 'string' },
        'client-id': { type: 'string' }, 'client-secret-file': { type: 'string' }, 'protect-role': { type: 'string' }, 'timeout-ms': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    io.stderr(`veil db: ${(e as Error).message}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  const sub = positionals[0];
  if (values.help || (sub !== 'install' && sub !== 'configure') || positionals.length > 1) {
    io.stdout(dbHelp);
    return values.help ? 0 : 2;
  }
  if (sub === 'install') {
    if (!values.apply) {
      io.stdout(installSql());
      return 0;
    }
    return apply('install', installSql(), values['database-url'], io);
  }
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
      veilUrl, clientId, clientSecret: secret, protectRole: values['protect-role'] ?? 'ingest',
      ...(values['token-url'] ? { tokenUrl: values['token-url'] } : {}), ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
  } catch (e) {
    io.stderr(`veil db configure: ${(e as Error).message}\n`);
    return 2;
  }
  return apply('configure', script, values['database-url'], io);
};

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
    if (result.code !== 0) {
      io.stderr(`veil db ${what}: psql failed (exit ${result.code}); nothing was changed (one transaction)\n`);
      return 1;
    }
    io.stderr(`veil db ${what}: done\n`);
    return 0;
  } catch (e) {
    io.stderr(`veil db ${what}: cannot run psql (${(e as NodeJS.ErrnoException).code ?? 'error'})\n`);
    return 1;
  }
}
