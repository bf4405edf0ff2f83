import { parseArgs } from 'node:util';
import type { VeilConfig } from '../app/config-file.ts';
import { openEngine } from '../app/open-engine.ts';
import { resolveConfigPath, resolveDataDir } from '../env/index.ts';
import { VeilError, type Engine, type KeyProvider } from '../engine/index.ts';
import {
  checkColumnName,
  DbFault,
  inspectTable,
  parseTableName,
  runRewrap,
  type ColumnField,
  type RewrapCounts,
  type RewrapResult,
  type RewrapSubjects,
  type SqlSession,
  type TableName,
} from '../db/index.ts';
import { fetchSubjectKeys, openSubjectKeyStore, subjectStoreSettings, type SubjectKeyStore } from '../subjects/index.ts';
import { CliFault } from './errors.ts';
import type { CliIo } from './io.ts';

export const rewrapHelp = `Usage: veil db rewrap --table [SCHEMA.]TABLE --key-column COL --role ROLE
                      [--column COL=Class.property ...] [--subject-column COL] [--rights Name=Value ...] [--batch N]
                      [--restart] [--database-url URL] [--config F] [--data-dir D]

Re-protects a table's protected columns under each key's primary version after a key rotation
('veil keys rotate'): every value is unprotected under the key version its header names and
protected again under the primary one, in this process with the keystore of --data-dir (no veil
service is called). Values that come back equal (a deterministic value already under the primary
version, a format-preserving value whose key version is pinned) are left alone; NULL stays NULL.

Batches of --batch rows (default 1000) in key order, each in its own transaction: the rows are
locked, the changed values written, and a checkpoint (last key, counts) written to
veil_rewrap.progress in the same transaction. A run killed or stopped (Ctrl-C stops after the
batch in flight) resumes after the last committed batch when run again with the same options;
a finished rewrap is reported as finished, nothing read. It starts over from the first row when
the configuration's key versions changed since it started (a later rotation), when the columns
differ, or with --restart.

A value that cannot be re-protected (a key version the keystore lacks, a value that is not
protected) is left as stored and reported by key column value, column and code (never a value);
the refusals are kept in veil_rewrap.refused.

Fields protected under keys scoped to the data subject run under each row's subject's key: the
subject column is the one veil.attach_subject named (or --subject-column). A value of an erased
subject cannot be unprotected by anyone: it is kept as stored and counted ("erased"), and does
not fail the rewrap. The subjects' keys come from the subject-key store (VEIL_SUBJECT_STORE, as
for veil serve); a rewrap never creates one.

Options:
  --table T        the table, as the catalog names it (case-sensitive)
  --key-column C   NOT NULL and alone in a unique index (the primary key); its values name rows
                   in the report, so it must not be a protected column
  --column C=F     a protected column and its field (Customer.email); repeatable. Default: the
                   columns veil's trigger maps (veil.attach)
  --subject-column C   the column naming each row's data subject, for a table without veil's
                   trigger (default: the one veil.attach_subject named)
  --role R         the veil role the rewrap runs as: it needs Protect and Unprotect on every field
  --rights N=V     rights evidences (repeatable; default Role=<role>)
  --protect-evidence N=V, --unprotect-evidence N=V
                   the processing contexts (default Action=Protect and Action=Unprotect)
  --batch N        rows per transaction, 1 to 100000 (default 1000)
  --restart        start from the first row even if a rewrap of the table is unfinished or done
  --database-url   default $VEIL_PG_URL, else $DATABASE_URL
  --config, --data-dir   as for every command: default $VEIL_CONFIG, $VEIL_DATA_DIR, ./.veil
On a table with veil's trigger the batches write with session_replication_role = replica (for
their own transaction only), which needs a superuser or a role granted SET on that parameter:
a writer role cannot skip the trigger. Other triggers of the table do not fire for the rewrap
either, and it refuses columns in a foreign key.
Exit codes: 0 done, every value under the primary version or unchanged; 1 failed or stopped
(committed batches stay; run again to resume); 2 usage error; 3 done, but some values were
refused (left as stored, listed).
`;

/** veil's class and property names (src/db/plpython/veil_admin.py NAME) */
const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

export interface RewrapOptions {
  table: TableName;
  keyColumn: string;
  /** undefined: the columns veil's trigger maps */
  columns?: ColumnField[];
  /** undefined: the one veil's trigger names, if any */
  subjectColumn?: string;
  role: string;
  rights: { name: string; value: string }[];
  protectEvidences: { name: string; value: string }[];
  unprotectEvidences: { name: string; value: string }[];
  batch: number;
  restart: boolean;
  databaseUrl: string;
  configFile: string;
  dataDir: string;
}

function evidence(text: string, option: string): { name: string; value: string } {
  const at = text.indexOf('=');
  if (at <= 0 || at === text.length - 1) throw new CliFault('USAGE', `${option} takes Name=Value`);
  return { name: text.slice(0, at), value: text.slice(at + 1) };
}

export function parseColumnSpec(text: string): ColumnField {
  const m = /^([^=]+)=([^.]+)\.(.+)$/.exec(text);
  if (!m) throw new CliFault('USAGE', '--column takes column=Class.property');
  if (!FIELD_NAME.test(m[2]!) || !FIELD_NAME.test(m[3]!))
    throw new CliFault('USAGE', '--column: class and property are veil names (a letter, then up to 63 letters, digits, _ or -)');
  try {
    return { column: checkColumnName(m[1]!, '--column'), className: m[2]!, propertyName: m[3]! };
  } catch (e) {
    throw new CliFault('USAGE', (e as Error).message);
  }
}

/** The command line of `veil db rewrap` (after `rewrap`); a CliFault names the option, never a value. */
export function parseRewrapArgs(args: string[], io: Pick<CliIo, 'env' | 'cwd'>): RewrapOptions | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        table: { type: 'string' },
        'key-column': { type: 'string' },
        column: { type: 'string', multiple: true },
        'subject-column': { type: 'string' },
        role: { type: 'string' },
        rights: { type: 'string', multiple: true },
        'protect-evidence': { type: 'string', multiple: true },
        'unprotect-evidence': { type: 'string', multiple: true },
        batch: { type: 'string' },
        restart: { type: 'boolean' },
        'database-url': { type: 'string' },
        config: { type: 'string' },
        'data-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    throw new CliFault('USAGE', (e as Error).message);
  }
  if (values.help) return 'help';
  if (!values.table) throw new CliFault('USAGE', 'needs --table');
  if (!values['key-column']) throw new CliFault('USAGE', 'needs --key-column');
  if (!values.role) throw new CliFault('USAGE', 'needs --role (the veil role to re-protect as)');
  let table: TableName;
  let keyColumn: string;
  let subjectColumn: string | undefined;
  try {
    table = parseTableName(values.table);
    keyColumn = checkColumnName(values['key-column'], '--key-column');
    if (values['subject-column'] !== undefined) subjectColumn = checkColumnName(values['subject-column'], '--subject-column');
  } catch (e) {
    throw new CliFault('USAGE', (e as Error).message);
  }
  const batch = values.batch === undefined ? 1000 : /^\d{1,6}$/.test(values.batch) ? Number(values.batch) : NaN;
  if (!(batch >= 1 && batch <= 100_000)) throw new CliFault('USAGE', '--batch must be an integer from 1 to 100000');
  const databaseUrl = values['database-url'] ?? io.env.VEIL_PG_URL ?? io.env.DATABASE_URL;
  if (!databaseUrl) throw new CliFault('USAGE', 'needs --database-url (or $VEIL_PG_URL or $DATABASE_URL)');
  const columns = values.column?.map(parseColumnSpec);
  return {
    table,
    keyColumn,
    ...(columns ? { columns } : {}),
    ...(subjectColumn ? { subjectColumn } : {}),
    role: values.role,
    rights: values.rights?.map((r) => evidence(r, '--rights')) ?? [{ name: 'Role', value: values.role }],
    protectEvidences: values['protect-evidence']?.map((r) => evidence(r, '--protect-evidence')) ?? [{ name: 'Action', value: 'Protect' }],
    unprotectEvidences: values['unprotect-evidence']?.map((r) => evidence(r, '--unprotect-evidence')) ?? [{ name: 'Action', value: 'Unprotect' }],
    batch,
    restart: values.restart === true,
    databaseUrl,
    configFile: resolveConfigPath(values.config, io.env, io.cwd),
    dataDir: resolveDataDir(values['data-dir'], io.env, io.cwd),
  };
}

/**
 * The key versions a rewrap protects under: each key the configuration references at its pinned
 * version, else the keystore's primary. A job is for one such set: after a later rotation a run
 * starts over.
 */
export function keyVersions(config: VeilConfig, keys: KeyProvider): string {
  const versions = new Set<string>();
  for (const ref of config.engine.keys.values()) versions.add(`${ref.id}@${ref.version ?? keys.info(ref.id)?.primary ?? 0}`);
  return [...versions].sort().join(',');
}

const figures = (c: RewrapCounts) =>
  `rows read ${c.rowsRead}, values rewrapped ${c.rewrapped}, unchanged ${c.unchanged}, refused ${c.refused}, NULL ${c.nulls}, rows updated ${c.rowsUpdated}, batches ${c.batches}` +
  (c.erased > 0 ? `, erased subjects' values kept ${c.erased}` : '');

/** The report on stdout: the outcome, this run's and the whole rewrap's figures, the refusals. */
export function rewrapReport(table: string, keyColumn: string, result: RewrapResult, elapsedMs: number): string {
  const lines: string[] = [];
  const outcome =
    result.state === 'finished'
      ? 'finished'
      : result.state === 'done-before'
        ? `already finished${result.start.kind === 'done' ? ` at ${result.start.finishedAt.toISOString()}` : ''}: nothing to do (--restart to rewrap again)`
        : 'stopped before the end: run again to resume';
  lines.push(`veil db rewrap ${table}: ${outcome}`);
  if (result.state !== 'done-before') lines.push(`  this run:     ${figures(result.run)}, elapsed ${(elapsedMs / 1000).toFixed(1)} s`);
  lines.push(`  whole rewrap: ${figures(result.job)}`);
  if (result.job.erased > 0) lines.push(`values of erased data subjects, kept as stored (unreadable for good): ${result.job.erased}`);
  if (result.job.refused > 0) {
    lines.push(`refused values, left as stored (${result.job.refused}; all in veil_rewrap.refused):`);
    // the key column's value names the row (JSON-quoted: no control characters reach the terminal)
    for (const r of result.refusals) lines.push(`  ${keyColumn}=${JSON.stringify(r.key)} column ${r.column}: ${r.code}`);
    if (result.refusals.length < result.job.refused) lines.push(`  … and ${result.job.refused - result.refusals.length} more`);
  }
  return `${lines.join('\n')}\n`;
}

async function connect(databaseUrl: string): Promise<SqlSession & { end(): Promise<void> }> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'veil db rewrap' });
  // a connection lost between queries: the next query fails and the run stops
  client.on('error', () => undefined);
  await client.connect();
  return { query: (text, values) => client.query(text, values), end: () => client.end() };
}

/** Messages of failures: the error's own where it names objects and codes only, else its kind. */
function failure(e: unknown): string {
  if ((e instanceof DbFault && e.code === 'REWRAP_REFUSED') || e instanceof CliFault) return e.message;
  if (e instanceof VeilError) return `${e.code}: ${e.message}`;
  const pgError = e as { code?: string; message?: string; severity?: string };
  // PostgreSQL's message names objects; its DETAIL (which can quote a row) is not printed
  if (pgError.severity && pgError.code) return `PostgreSQL ${pgError.code}: ${pgError.message}`;
  if (typeof pgError.code === 'string') return `cannot reach the database (${pgError.code})`;
  return `unexpected error (${(e as Error).name ?? 'error'})`;
}

export async function dbRewrapCommand(args: string[], io: CliIo, helpText: string): Promise<number> {
  let options;
  try {
    options = parseRewrapArgs(args, io);
  } catch (e) {
    io.stderr(`veil db rewrap: ${(e as Error).message}\n`);
    return 2;
  }
  if (options === 'help') {
    io.stdout(helpText);
    return 0;
  }
  const started = io.now().getTime();
  let stop = false;
  const onSignal = () => {
    stop = true;
    io.stderr('veil db rewrap: stopping after the batch in flight\n');
  };
  let session: Awaited<ReturnType<typeof connect>> | undefined;
  let store: SubjectKeyStore | undefined;
  try {
    const { engine, config, keystore } = await openEngine({
      configFile: options.configFile,
      dataDir: options.dataDir,
      env: io.env,
      now: io.now,
      provision: false,
      notice: (line) => io.stderr(`veil db rewrap: ${line}\n`),
    });
    session = await connect(options.databaseUrl);
    const { target, chains, scoped } = await boundTable(session, options, engine);
    if (scoped) store = await openSubjectKeyStore({ keystore, dataDir: options.dataDir, settings: subjectStoreSettings(io.env) });
    const subjects = store ? subjectAccess(store, engine) : undefined;
    process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
    const result = await runRewrap(session, {
      target,
      chains,
      ...(subjects ? { subjects } : {}),
      keyVersions: keyVersions(config, keystore),
      batchSize: options.batch,
      restart: options.restart,
      shouldStop: () => stop,
      ...progressNotes(io, target, started),
    });
    io.stdout(rewrapReport(target.table, target.keyColumn, result, io.now().getTime() - started));
    if (result.state === 'stopped') return 1;
    return result.job.refused > 0 ? 3 : 0;
  } catch (e) {
    io.stderr(`veil db rewrap: ${failure(e)}\n`);
    if (session) io.stderr('veil db rewrap: the batches committed before stay done; run again to resume\n');
    return 1;
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    await session?.end().catch(() => undefined);
    await store?.close().catch(() => undefined);
  }
}

type RewrapRun = Parameters<typeof runRewrap>[1];

/**
 * The table as the catalog describes it, its fields bound for a rewrap under the role and
 * evidences given; `scoped` when some are protected under keys scoped to the data subject — then
 * the target keeps its subject column, and a table without one is REWRAP_REFUSED.
 */
async function boundTable(
  session: SqlSession,
  options: RewrapOptions,
  engine: Engine,
): Promise<{ target: RewrapRun['target']; chains: RewrapRun['chains']; scoped: boolean }> {
  const inspected = await inspectTable(session, options.table, options.keyColumn, options.columns, options.subjectColumn);
  // no erasedKept: a value of an erased subject comes back as SUBJECT_ERASED, which the runner keeps and counts
  const bound = engine.bindRewrap({
    identity: { roles: [options.role] },
    rightsEvidences: options.rights,
    processingEvidences: options.protectEvidences,
    unprotectEvidences: options.unprotectEvidences,
    fields: inspected.fields,
  });
  const { subjectColumn, ...shared } = inspected;
  const scoped = bound.subjectScoped.some(Boolean);
  if (scoped && subjectColumn === undefined) {
    throw new DbFault(
      'REWRAP_REFUSED',
      `${inspected.table} has fields protected under keys scoped to the data subject: name the column holding each row's subject (veil.attach_subject, or --subject-column)`,
    );
  }
  return { target: scoped ? inspected : shared, chains: bound.transforms, scoped };
}

/** the run's progress on stderr: where it starts, then at most one line every 5 s (key column values only, never a protected value) */
function progressNotes(io: CliIo, target: RewrapRun['target'], started: number): Pick<RewrapRun, 'onStart' | 'onBatch'> {
  let lastNote = started;
  return {
    onStart: (start) => {
      if (start.kind === 'new') io.stderr(`veil db rewrap: ${target.table} from the first row (${start.reason})\n`);
      else if (start.kind === 'resumed') {
        io.stderr(
          `veil db rewrap: ${target.table} resumed ${start.lastKey === null ? 'from the first row (no batch committed before)' : `after ${target.keyColumn}=${JSON.stringify(start.lastKey)} (${start.batches} batches done before)`}\n`,
        );
      }
    },
    onBatch: ({ run, lastKey }) => {
      const now = io.now().getTime();
      if (now - lastNote < 5000) return;
      lastNote = now;
      io.stderr(`veil db rewrap: ${run.rowsRead} rows in ${run.batches} batches, up to ${target.keyColumn}=${JSON.stringify(lastKey ?? null)}\n`);
    },
  };
}

/** A batch's subjects' keys as the store has them (never created: a rewrap gives nobody a new key), and running under them. */
function subjectAccess(store: SubjectKeyStore, engine: Engine): RewrapSubjects {
  return {
    keys: (ids) =>
      fetchSubjectKeys(
        store,
        ids.map((id) => ({ id, create: false })),
        'refuse',
      ),
    within: (subject, ring, fn) => engine.withSubject(subject, ring, fn),
  };
}
