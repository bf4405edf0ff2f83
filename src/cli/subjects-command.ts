import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openKeystore } from '../app/open-engine.ts';
import { requireConfig } from '../app/config-file.ts';
import { FileAuditSink } from '../audit/index.ts';
import { openControlStore } from '../control/index.ts';
import { resolveConfigPath, resolveDataDir } from '../env/index.ts';
import { VeilError } from '../engine/index.ts';
import type { LocalKeystore } from '../keystore/index.ts';
import {
  BULK_ERASURE_MAX,
  ErasureService,
  openSubjectKeyStore,
  subjectStoreSettings,
  verifyReceipt,
  type SubjectActor,
  type SubjectStatus,
} from '../subjects/index.ts';
import { CliFault } from './errors.ts';
import { eraseFromLines, receiptsOf, verifyLines } from './subjects-bulk.ts';
import { rotateWrapKey } from './subjects-rotate-wrap.ts';
import { usageExitCode, type CliIo, type Command } from './io.ts';

export const subjectsHelp = `Usage: veil subjects <action> [options]

Erasure by crypto-shredding (docs/erasure.md): a data subject's key in the subject-key store
(VEIL_SUBJECT_STORE: local <data dir>/subjects.db, or kafka) is destroyed, and every value
protected under it becomes unreadable everywhere.

Actions:
  erase <id|-> --reason <text> [--by <name>]
                     destroys the subject's key; prints the signed receipt as JSON
                     ({"receipt": "<compact JWS>", "claims": {...}})
  erase --from <file|-> --reason <text> [--by <name>]
                     erases every subject of the file (one id a line), 1,000 at a time; prints
                     a JSON line each: {"line", "subject", "generation", "alreadyErased",
                     "receipt"} or {"line", "error"}; run again after a failure, it erases
                     what is left and returns every receipt
  status <id|-> [--json]
                     exists, erased or unknown, with the subject's reference and generation
  rotate-wrap-key [--by NAME]
                     shreds copies of the subject-key store taken before (backups): a new version
                     of the key wrapping subject keys (veil-subjects), every living subject key
                     wrapped under it anew, then its older versions destroyed in the key set
                     (docs/erasure.md, "Backups"); prints what it did as JSON; audited
  verify-receipt <file|->
                     checks a receipt (the JWS, or the JSON erase printed) against the data
                     dir's key set; prints its claims. A file of many (one a line: JWS, or what
                     erase --from printed): a JSON line each, {"line", "valid", "claims"|"error"}
  help               this text

Options:
  --reason <text>    why (1-500 characters on one line; it must not name the subject):
                     it goes into the receipt and the audit log
  --by <name>        who erases, as the receipt names them (default: cli:<user name>)
  --from <file|->    erase: the subjects, one id a line ('-': stdin)
  --batch <n>        erase --from: subjects a batch, 1 to 1000 (default 1000): a batch's lines are
                     printed once it is erased
  --data-dir <dir>   default: $VEIL_DATA_DIR, else ./.veil
  --config <file>    the configuration veil serve runs with (default: $VEIL_CONFIG, else the
                     shipped example): the audit log rotates as its service.audit says
  --json             status as JSON

A subject id given as '-' is read from stdin (one line): it then stays out of shell history and
process lists. Output names the subject by its reference (a keyed hash), never by its id, and
never shows a key. Each erasure and look-up is recorded in <data dir>/audit.log (channel cli).
Receipts name VEIL_BASE_URL as their issuer, else urn:veil:cli.
Exit codes: 0 ok, 1 refused, failed or an invalid receipt, 2 usage error.
`;

const OPTIONS = {
  reason: { type: 'string' },
  from: { type: 'string' },
  batch: { type: 'string' },
  by: { type: 'string' },
  'data-dir': { type: 'string' },
  config: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Flags = { reason?: string; from?: string; batch?: string; by?: string; 'data-dir'?: string; config?: string; json?: boolean; help?: boolean };

const ALLOWED: Record<string, readonly (keyof Flags)[]> = {
  'rotate-wrap-key': ['by', 'config'],
  erase: ['reason', 'from', 'batch', 'by', 'config'],
  status: ['json', 'config'],
  'verify-receipt': [],
};

export const subjectsCommand: Command = async (args, io) => {
  let action: string;
  let operand: string;
  let flags: Flags;
  try {
    const parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
    flags = parsed.values as Flags;
    if (flags.help || parsed.positionals[0] === 'help' || parsed.positionals.length === 0) {
      io.stdout(subjectsHelp);
      return usageExitCode(flags.help === true || parsed.positionals[0] === 'help', parsed.positionals[0], (a) => a === 'help' || ALLOWED[a] !== undefined);
    }
    [action, operand] = checkArgs(parsed.positionals, flags);
  } catch (error) {
    // parseArgs names the option, never a value given to it; a positional is never echoed
    io.stderr(`veil subjects: ${firstLine((error as Error).message)}\nRun 'veil subjects help' for usage.\n`);
    return 2;
  }
  try {
    const dataDir = resolveDataDir(flags['data-dir'], io.env, io.cwd);
    if (action === 'verify-receipt') return await verify(operand, dataDir, io);
    if (action === 'rotate-wrap-key') return await rotateWrap(flags, dataDir, io);
    return await administer(action as 'erase' | 'status', operand, flags, dataDir, io);
  } catch (error) {
    if (error instanceof CliFault) {
      io.stderr(`veil subjects: ${error.message}\n`);
      return 2;
    }
    // a VeilError's message never holds a subject id; anything else is not printed
    io.stderr(`veil subjects: ${error instanceof VeilError ? `${error.message} [${error.code}]` : `unexpected error (${(error as Error).name})`}\n`);
    return 1;
  }
};

function checkArgs(positionals: string[], flags: Flags): [string, string] {
  const [action, operand, ...extra] = positionals as [string, string | undefined, ...string[]];
  const allowed = ALLOWED[action];
  if (!allowed)
    throw new CliFault(
      'USAGE',
      `unknown action${/^[a-z-]{1,20}$/.test(action) ? ` '${action}'` : ''}; expected erase, status, verify-receipt or rotate-wrap-key`,
    );
  if (flags.batch !== undefined && (flags.from === undefined || !/^[1-9][0-9]{0,3}$/.test(flags.batch) || Number(flags.batch) > BULK_ERASURE_MAX))
    throw new CliFault('USAGE', `--batch goes with --from and is 1 to ${BULK_ERASURE_MAX}`);
  if (action === 'rotate-wrap-key') {
    if (operand !== undefined) throw new CliFault('USAGE', "'rotate-wrap-key' takes no operand");
  } else if (flags.from !== undefined) {
    if (operand !== undefined) throw new CliFault('USAGE', "'erase --from' takes its subjects from the file, not the command line");
  } else if (operand === undefined || extra.length > 0)
    throw new CliFault('USAGE', `'${action}' takes one ${action === 'verify-receipt' ? 'file (or -)' : 'subject id (or -)'}`);
  for (const name of Object.keys(flags) as (keyof Flags)[]) {
    if (name !== 'data-dir' && !allowed.includes(name)) throw new CliFault('USAGE', `--${name} does not apply to '${action}'`);
  }
  if (action === 'erase' && flags.reason === undefined) throw new CliFault('USAGE', "'erase' needs --reason");
  return [action, operand ?? ''];
}

async function administer(action: 'erase' | 'status', operand: string, flags: Flags, dataDir: string, io: CliIo): Promise<number> {
  if (flags.from !== undefined) {
    const text = await readSource(flags.from, io, 'the subjects file cannot be read');
    return withKeys(dataDir, io, (keystore) => run(action, { text }, flags, keystore, dataDir, io));
  }
  const id = operand === '-' ? oneLine(await io.readStdin()) : operand;
  if (operand !== '-') io.stderr('veil subjects: note: a subject id on the command line may be kept in shell history; prefer - and stdin\n');
  return withKeys(dataDir, io, (keystore) => run(action, id, flags, keystore, dataDir, io));
}

async function run(
  action: 'erase' | 'status',
  id: string | { text: string },
  flags: Flags,
  keystore: LocalKeystore,
  dataDir: string,
  io: CliIo,
): Promise<number> {
  // the audit log rotates as the service's: a writer keeping fewer files would delete what the configuration keeps
  const { config } = await requireConfig(resolveConfigPath(flags.config, io.env, io.cwd));
  const store = await openSubjectKeyStore({ keystore, dataDir, settings: subjectStoreSettings(io.env) });
  const audit = new FileAuditSink(join(dataDir, 'audit.log'), config.service.audit);
  try {
    const service = new ErasureService({ store, keys: keystore, audit, issuer: io.env.VEIL_BASE_URL || 'urn:veil:cli', now: io.now });
    const actor: SubjectActor = { by: flags.by ?? `cli:${userName(io)}`, channel: 'cli', requestId: randomUUID() };
    if (typeof id !== 'string') return await eraseFromLines(id.text, service, flags.reason!, actor, io, Number(flags.batch ?? BULK_ERASURE_MAX));
    if (action === 'erase') {
      const { receipt, claims } = await service.erase(id, flags.reason, actor);
      io.stdout(`${JSON.stringify({ receipt, claims }, null, 2)}\n`);
    } else {
      const status = await service.status(id, actor);
      io.stdout(flags.json ? `${JSON.stringify(status, null, 2)}\n` : `${statusLine(status)}\n`);
    }
    return 0;
  } finally {
    await store.close();
    await audit.close();
  }
}

async function verify(operand: string, dataDir: string, io: CliIo): Promise<number> {
  const receipts = receiptsOf(await readSource(operand, io, 'the receipt file cannot be read'));
  if (receipts.length !== 1) return withKeys(dataDir, io, (keystore) => verifyLines(receipts, keystore, io));
  const claims = await withKeys(dataDir, io, (keystore) => verifyReceipt(receipts[0]!.receipt, keystore));
  io.stdout(`${JSON.stringify({ valid: true, claims }, null, 2)}\n`);
  return 0;
}

async function rotateWrap(flags: Flags, dataDir: string, io: CliIo): Promise<number> {
  // the audit log rotates as the service's (as for erase)
  const { config } = await requireConfig(resolveConfigPath(flags.config, io.env, io.cwd));
  return withKeys(dataDir, io, (keystore) => rotateWrapKey(keystore, dataDir, flags.by ?? `cli:${userName(io)}`, config.service.audit, io));
}

/** A file's text, or stdin's for '-'. */
async function readSource(operand: string, io: CliIo, unreadable: string): Promise<string> {
  if (operand === '-') return io.readStdin();
  return readFile(resolve(io.cwd, operand), 'utf8').catch(() => {
    throw new CliFault('USAGE', unreadable);
  });
}

/** The data dir's key set (through the shared control store when VEIL_CONTROL_STORE names one, kept open for the command: veil-receipts may be created). */
async function withKeys<T>(dataDir: string, io: CliIo, use: (keystore: LocalKeystore) => Promise<T>): Promise<T> {
  const notice = (line: string) => io.stderr(`veil subjects: ${line}\n`);
  const control = await openControlStore(io.env, dataDir, notice);
  try {
    const { keystore, lease } = await openKeystore({ dataDir, env: io.env, now: io.now, notice, ...(control ? { control } : {}) });
    lease?.stop();
    return await use(keystore);
  } finally {
    await control?.close();
  }
}

function statusLine(status: SubjectStatus): string {
  switch (status.state) {
    case 'exists':
      return `exists  subject ${status.subject}  generation ${status.generation}  created ${status.createdAt}`;
    case 'erased':
      return `erased  subject ${status.subject}  generation ${status.generation}  erased ${status.erasedAt}`;
    default:
      return `unknown  subject ${status.subject}`;
  }
}

/** stdin's first line without its line ending (what `echo id |` gives). */
function oneLine(text: string): string {
  return text.replace(/\r?\n$/, '');
}

function userName(io: CliIo): string {
  try {
    return userInfo().username;
  } catch {
    return io.env.USER ?? 'unknown';
  }
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? '';
}
