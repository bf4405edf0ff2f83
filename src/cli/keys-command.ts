import { parseArgs } from 'node:util';
import { KEY_TYPE_NAMES, VeilError, type KeyInfo } from '../engine/index.ts';
import { isKeyType, isValidKeyId, kekFromEnv } from '../keystore/index.ts';
import { openKeystore } from '../app/open-engine.ts';
import { openControlStore, type ControlStore } from '../control/index.ts';
import { CliFault } from './errors.ts';
import { destroyKek } from './keys-destroy.ts';
import { publicJwks } from './keys-export-public.ts';
import { usageExitCode, type CliIo, type Command } from './io.ts';
import { resolveDataDir } from '../env/index.ts';

export const keysHelp = `Usage: veil keys <action> [options]

Manage the local keystore (<data dir>/keystore.json). Key material never leaves it.

Actions:
  create  --id <id> --type <type>              new key with random material
  rotate  --id <id>                            new random version, made primary
  import  --id <id> --type <type> --hex <hex|->
                                               existing material (migration): a new key,
                                               or a new primary version of a key of that type
  list    [--json]                             ids, types, versions; no material
  export-public [--id <id>]                    the public keys (JWKS) of every jwt-es256 key's
                                               versions — the token signing key, veil-receipts —
                                               or of the one named: receipts verify against it
  rewrap                                       rotate the key-encryption key: the key set as
                                               it is, wrapped by the KEK VEIL_TO_* names
  destroy-kek [--pending-days N]               destroy the KEK VEIL_KMS names, once the data
                                               dir's key set is wrapped by another (shredding
                                               backups: docs/erasure.md); AWS KMS deletes it
                                               after N days (7-30, default 7), unusable at once
  help                                         this text

Options:
  --id <id>          key id: 1-64 of a-z 0-9 . _ - (starting with a letter or digit)
  --type <type>      ${KEY_TYPE_NAMES.join(', ')}
  --hex <hex|->      key material in hex; '-' reads it from stdin (preferred: it stays
                     out of shell history and process lists)
  --data-dir <dir>   default: $VEIL_DATA_DIR, else ./.veil
  --json             list as JSON

The KEK comes from VEIL_KMS (aws-kms or pkcs11, with their settings: docs/operations.md), else
from VEIL_MASTER_KEY (64 hex digits or base64 of 32 bytes); without either a development key file
<data dir>/master.key is used (created on first use, mode 0600). rewrap's target is the same
settings with VEIL_TO_ for VEIL_ (VEIL_TO_KMS=aws-kms VEIL_TO_KMS_KEY_ID=...): no key and no
protected value changes; a keystore in the master-key format becomes a KMS-wrapped key set.
Exit codes: 0 ok, 1 keystore error, 2 usage error.
`;

const OPTIONS = {
  id: { type: 'string' },
  type: { type: 'string' },
  hex: { type: 'string' },
  'data-dir': { type: 'string' },
  json: { type: 'boolean' },
  'pending-days': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Flags = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

const ALLOWED: Record<string, readonly (keyof Flags)[]> = {
  create: ['id', 'type'],
  rotate: ['id'],
  import: ['id', 'type', 'hex'],
  list: ['json'],
  rewrap: [],
  'export-public': ['id'],
  'destroy-kek': ['pending-days'],
};

/** flags an action takes without needing them */
const OPTIONAL: Record<string, readonly (keyof Flags)[]> = { list: ['json'], 'export-public': ['id'], 'destroy-kek': ['pending-days'] };

export const keysCommand: Command = async (args, io) => {
  let action: string | undefined;
  let flags: Flags;
  try {
    const parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
    flags = parsed.values as Flags;
    if (flags.help || parsed.positionals[0] === 'help') {
      io.stdout(keysHelp);
      return usageExitCode(true, parsed.positionals[0], (a) => a === 'help' || ALLOWED[a] !== undefined);
    }
    if (parsed.positionals.length !== 1) throw new CliFault('USAGE', 'expected one action: create, rotate, import, list, rewrap, export-public or destroy-kek');
    action = parsed.positionals[0] as string;
    const allowed = ALLOWED[action];
    if (!allowed) {
      // echo only what looks like a mistyped action, never a pasted value
      const shown = /^[a-z-]{1,20}$/.test(action) ? ` '${action}'` : '';
      throw new CliFault('USAGE', `unknown action${shown}; expected create, rotate, import, list, rewrap, export-public or destroy-kek`);
    }
    for (const name of Object.keys(flags) as (keyof Flags)[]) {
      if (name !== 'data-dir' && !allowed.includes(name)) throw new CliFault('USAGE', `--${name} does not apply to '${action}'`);
    }
    for (const name of allowed) {
      if (!OPTIONAL[action]?.includes(name) && flags[name] === undefined) throw new CliFault('USAGE', `'${action}' needs --${name}`);
    }
    if (flags.id !== undefined && !isValidKeyId(flags.id)) {
      throw new CliFault('USAGE', '--id must be 1-64 characters of a-z 0-9 . _ - starting with a letter or digit');
    }
    if (flags.type !== undefined && !isKeyType(flags.type)) {
      throw new CliFault('USAGE', `--type must be one of ${KEY_TYPE_NAMES.join(', ')}`);
    }
  } catch (error) {
    // parseArgs errors name the option, never a value given to a known one
    const message = error instanceof Error ? error.message : String(error);
    io.stderr(`veil keys: ${firstLine(message)}\nRun 'veil keys help' for usage.\n`);
    return 2;
  }

  try {
    return await run(action, flags, io);
  } catch (error) {
    if (error instanceof CliFault) {
      io.stderr(`veil keys: ${error.message}\n`);
      return 2;
    }
    const message = error instanceof VeilError ? `${error.message} [${error.code}]` : unexpected(error);
    io.stderr(`veil keys: ${firstLine(message)}\n`);
    return 1;
  }
};

async function run(action: string, flags: Flags, io: CliIo): Promise<number> {
  let hex: string | undefined;
  if (action === 'import') {
    if (flags.hex === '-') hex = await io.readStdin();
    else {
      hex = flags.hex as string;
      io.stderr('veil keys: note: material given on the command line may be kept in shell history; prefer --hex -\n');
    }
  }
  const dataDir = resolveDataDir(flags['data-dir'], io.env, io.cwd);
  // the old KEK opens nothing any more (the key set moved to the new one): the key set is not opened
  if (action === 'destroy-kek') return destroyKek(dataDir, flags['pending-days'], io);
  const control = await openControlStore(io.env, dataDir, (line) => io.stderr(`veil keys: ${line}\n`));
  try {
    return await runOn(action, flags, hex, dataDir, control, io);
  } finally {
    await control?.close();
  }
}

async function runOn(action: string, flags: Flags, hex: string | undefined, dataDir: string, control: ControlStore | undefined, io: CliIo): Promise<number> {
  const { keystore, lease } = await openKeystore({
    dataDir,
    env: io.env,
    now: io.now,
    notice: (line) => io.stderr(`veil keys: ${line}\n`),
    ...(control ? { control } : {}),
  });
  lease?.stop();
  const id = flags.id as string;
  const type = flags.type as string;
  switch (action) {
    case 'create': {
      const info = await keystore.create(id, type as KeyInfo['type']);
      io.stdout(`created key ${info.id} (${info.type}), version ${info.primary}\n`);
      return 0;
    }
    case 'rotate': {
      const info = await keystore.rotate(id);
      io.stdout(`rotated key ${info.id} (${info.type}): version ${info.primary} is primary, ${info.versions.length - 1} older version(s) stay usable\n`);
      return 0;
    }
    case 'rewrap': {
      const target = await kekFromEnv(targetEnv(io.env));
      if (!target) throw new CliFault('USAGE', 'rewrap needs the target KEK: VEIL_TO_KMS (aws-kms or pkcs11) and its settings with VEIL_TO_ for VEIL_');
      const from = keystore.kekDescription();
      await keystore.rewrap(target.direct);
      io.stdout(`rewrapped ${keystore.path}: from ${from} to ${target.direct.description}; no key changed\n`);
      return 0;
    }
    case 'export-public': {
      io.stdout(`${JSON.stringify(publicJwks(keystore, flags.id), null, 2)}\n`);
      return 0;
    }
    case 'import': {
      const info = await keystore.import(id, type as KeyInfo['type'], hex ?? '');
      io.stdout(`imported key ${info.id} (${info.type}) as version ${info.primary}, now primary\n`);
      return 0;
    }
    default: {
      const keys = keystore.list();
      io.stdout(flags.json ? `${JSON.stringify({ keystore: keystore.path, keys }, null, 2)}\n` : formatList(keys, keystore.path));
      return 0;
    }
  }
}

export function formatList(keys: readonly KeyInfo[], path: string): string {
  if (keys.length === 0) return `no keys in ${path}\n`;
  const lines: string[] = [];
  for (const key of keys) {
    lines.push(`${key.id}  ${key.type}  primary v${key.primary}`);
    for (const v of key.versions) {
      lines.push(`  v${v.version}  ${v.createdAt}  ${v.origin}${v.version === key.primary ? '  (primary)' : ''}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function unexpected(error: unknown): string {
  // never print a stack or a value: the error's own message only
  return error instanceof Error ? `unexpected error: ${error.message}` : 'unexpected error';
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? '';
}

/** The environment of rewrap's target: VEIL_TO_X as VEIL_X (other variables, AWS credentials, as they are). */
function targetEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) if (!k.startsWith('VEIL_KMS') && !k.startsWith('VEIL_PKCS11')) out[k] = v;
  for (const [k, v] of Object.entries(env)) if (k.startsWith('VEIL_TO_')) out[`VEIL_${k.slice('VEIL_TO_'.length)}`] = v;
  return out;
}
