import { parseArgs } from 'node:util';
import { loadConfigFile, requireConfig } from '../app/config-file.ts';
import { provisionKeys } from '../app/config-keys.ts';
import { resolveConfigPath, resolveDataDir } from '../app/paths.ts';
import { formatIssue, VeilError } from '../engine/index.ts';
import { openKeystore } from '../app/open-engine.ts';
import { usageExitCode, type Command } from './io.ts';

export const configHelp = `Usage: veil config <action> [options]

Actions:
  validate  [F | --config F]             check a configuration; prints every problem as
                                         file:line: severity: /json/pointer: message
  provision [F | --config F] [--data-dir D]  create the keys the configuration references
                                         and the keystore lacks
Options:
  --config F     default: $VEIL_CONFIG, else the shipped config/example.yaml
  --data-dir D   default: $VEIL_DATA_DIR, else ./.veil
Exit codes: 0 valid (warnings allowed), 1 invalid, 2 usage error.
`;

export const configCommand: Command = async (args, io) => {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { config: { type: 'string' }, 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  } catch (e) {
    io.stderr(`veil config: ${(e as Error).message}\n`);
    return 2;
  }
  const action = parsed.positionals[0];
  if (parsed.values.help || action === 'help' || action === undefined) {
    io.stdout(configHelp);
    return usageExitCode(parsed.values.help === true || action === 'help', action, (a) => a === 'help' || a === 'validate' || a === 'provision');
  }
  const [, positionalFile, ...extra] = parsed.positionals;
  if (extra.length > 0 || (positionalFile !== undefined && parsed.values.config !== undefined)) {
    io.stderr('veil config: name one configuration file, as F or --config F\n');
    return 2;
  }
  const file = resolveConfigPath(parsed.values.config ?? positionalFile, io.env, io.cwd);
  if (action === 'validate') {
    const loaded = await loadConfigFile(file);
    for (const issue of loaded.issues) io.stdout(`${formatIssue(file, issue)}\n`);
    const errors = loaded.issues.filter((i) => i.severity === 'error').length;
    const warnings = loaded.issues.length - errors;
    if (errors) {
      io.stderr(`${file}: invalid: ${errors} error(s), ${warnings} warning(s)\n`);
      return 1;
    }
    io.stdout(`${file}: valid${warnings ? ` with ${warnings} warning(s)` : ''}\n`);
    return 0;
  }
  if (action === 'provision') {
    try {
      const { config } = await requireConfig(file);
      const dataDir = resolveDataDir(parsed.values['data-dir'], io.env, io.cwd);
      const { keystore, lease } = await openKeystore({ dataDir, env: io.env, now: io.now, notice: (line) => io.stderr(`veil config: ${line}\n`) });
      lease?.stop();
      const created = await provisionKeys(config.engine, keystore);
      io.stdout(created.length ? `created ${created.join(', ')} in ${keystore.path}\n` : `every key of ${file} is in ${keystore.path}\n`);
      return 0;
    } catch (e) {
      io.stderr(`veil config: ${e instanceof VeilError ? `${e.message} [${e.code}]` : 'unexpected error'}\n`);
      return 1;
    }
  }
  io.stderr(`veil config: unknown action; expected validate or provision\n`);
  return 2;
};
