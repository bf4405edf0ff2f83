import { parseArgs } from 'node:util';
import { exitCodeOf, failureText, jsonReport, runDriftCheck, textReport, type SqlSession } from '../db/index.ts';
import { CliFault } from './errors.ts';
import type { CliIo } from './io.ts';

export const checkHelp = `Usage: veil db check [--table [SCHEMA.]TABLE ...] [--sample N] [--min-share S] [--json]
                     [--database-url URL]

Finds personal data that veil does not protect in the tables it protects: for each table with
at least one column attached to veil's trigger (veil.attach), samples up to --sample rows and
runs veil discover's detectors (email, payment card, IBAN, phone, US SSN, UK NINO, French NIR,
IP address; person names and dates of birth where the column's or field's name says so) over
its unattached text, varchar, char, citext, json and jsonb columns — inside JSON by path, as in
'orders.details -> contact.email'. Run it after each migration: a new column such as
backup_email, or a JSON field holding an email, shows up before it fills with cleartext.
Prints names, paths, kinds and counts only: sampled values are never kept, printed or logged.

A column or path is a finding when at least --min-share of its sampled values (NULLs left out)
are of one kind: a column holding only NULLs is no finding, whatever its name. Free text that
mentions personal data, and names in columns whose name does not say so, are not found.
The sample is bounded: a table the planner estimates above twice --sample rows is sampled from
random pages (TABLESAMPLE SYSTEM), a smaller or never-analysed one by its first rows.

Options:
  --table T        check only this table: name (in any schema) or schema.name, as the catalog
                   spells it; repeatable. Default: every table with attached columns
  --sample N       rows per table, 1 to 100000 (default 1000)
  --min-share S    report when at least this share of values is of one kind, in (0, 1] (default 0.8)
  --json           one JSON document on stdout (status, findings, tables), for CI
  --database-url   default $VEIL_PG_URL, else $DATABASE_URL; the role needs SELECT on the tables
Exit codes: 0 clean; 3 findings (unattached columns hold personal data); 1 error: the database
cannot be reached, or the check is incomplete (a table could not be sampled, a column is not
readable, a --table names no table with attached columns); 2 usage error.
`;

export interface CheckOptions {
  tables: string[];
  sample: number;
  minShare: number;
  json: boolean;
  databaseUrl: string;
}

/** The command line of `veil db check` (after `check`); a CliFault names the option, never a value. */
export function parseCheckArgs(args: string[], env: CliIo['env']): CheckOptions | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        table: { type: 'string', multiple: true },
        sample: { type: 'string' },
        'min-share': { type: 'string' },
        json: { type: 'boolean' },
        'database-url': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    throw new CliFault('USAGE', (e as Error).message);
  }
  if (values.help) return 'help';
  const sample = values.sample === undefined ? 1000 : /^\d{1,6}$/.test(values.sample) ? Number(values.sample) : NaN;
  if (!(sample >= 1 && sample <= 100_000)) throw new CliFault('USAGE', '--sample must be an integer from 1 to 100000');
  const minShare = values['min-share'] === undefined ? 0.8 : /^\d*\.?\d+$/.test(values['min-share']) ? Number(values['min-share']) : NaN;
  if (!(minShare > 0 && minShare <= 1)) throw new CliFault('USAGE', '--min-share must be a number in (0, 1]');
  const tables = values.table ?? [];
  if (tables.some((t) => t === '')) throw new CliFault('USAGE', '--table must name a table');
  const databaseUrl = values['database-url'] ?? env.VEIL_PG_URL ?? env.DATABASE_URL;
  if (!databaseUrl) throw new CliFault('USAGE', 'needs --database-url (or $VEIL_PG_URL or $DATABASE_URL)');
  return { tables, sample, minShare, json: values.json === true, databaseUrl };
}

async function connect(databaseUrl: string): Promise<SqlSession & { end(): Promise<void> }> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'veil db check', connectionTimeoutMillis: 15_000 });
  client.on('error', () => undefined);
  await client.connect();
  return { query: (text, values) => client.query(text, values), end: () => client.end() };
}

export async function dbCheckCommand(args: string[], io: CliIo): Promise<number> {
  let options;
  try {
    options = parseCheckArgs(args, io.env);
  } catch (e) {
    io.stderr(`veil db check: ${(e as Error).message}\n`);
    return 2;
  }
  if (options === 'help') {
    io.stdout(checkHelp);
    return 0;
  }
  let session: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    session = await connect(options.databaseUrl);
    const report = await runDriftCheck(session, { tables: options.tables, sample: options.sample, minShare: options.minShare });
    io.stdout(options.json ? jsonReport(report) : textReport(report));
    return exitCodeOf(report);
  } catch (e) {
    const message = failureText(e);
    io.stderr(`veil db check: ${message}\n`);
    if (options.json) io.stdout(`${JSON.stringify({ status: 'error', error: message })}\n`);
    return 1;
  } finally {
    await session?.end().catch(() => undefined);
  }
}
