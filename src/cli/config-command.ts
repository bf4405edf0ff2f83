import { parseArgs } from 'node:util';
import { loadConfigFile, requireConfig } from '../app/config-file.ts';
import { provisionKeys } from '../keystore/index.ts';
import { resolveConfigPath, resolveDataDir } from '../env/index.ts';
import { compileText, formatIssue, VeilError, type ConfigIssue } from '../engine/index.ts';
import { readFile } from 'node:fs/promises';
import { openKeystore } from '../app/open-engine.ts';
import { ConfigVersions, type ControlStore, ensureControlKey, openControlStore } from '../control/index.ts';
import { usageExitCode, type Command } from './io.ts';
import type { registrySchemaIssues } from '../stream/protect/index.ts';

export const configHelp = `Usage: veil config <action> [options]

Actions:
  validate  [F | --config F] [--registry URL]
                                         check a configuration; prints every problem as
                                         file:line: severity: /json/pointer: message. With a
                                         schema registry, also each avro, json-schema and
                                         protobuf pipeline's mapped paths against the latest
                                         schema of <source topic>-value (unreachable: a warning)
  provision [F | --config F] [--data-dir D]  create the keys the configuration references
                                         and the keystore lacks
  publish   [F | --config F] [--data-dir D] [--note N]
                                         publish F as the newest configuration version (the
                                         active one); with VEIL_CONTROL_STORE=kafka every
                                         process sharing the store runs it within seconds
Options:
  --config F     default: $VEIL_CONFIG, else the shipped config/example.yaml
  --data-dir D   default: $VEIL_DATA_DIR, else ./.veil
  --note N       publish: what the version changes (shown in the portal's history)
  --registry URL validate: the Confluent-API schema registry (default $SCHEMA_REGISTRY_URL)
Exit codes: 0 valid (warnings allowed), 1 invalid, 2 usage error.
`;

export const configCommand: Command = async (args, io) => {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        config: { type: 'string' },
        'data-dir': { type: 'string' },
        note: { type: 'string' },
        registry: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
    });
  } catch (e) {
    io.stderr(`veil config: ${(e as Error).message}\n`);
    return 2;
  }
  const action = parsed.positionals[0];
  if (parsed.values.help || action === 'help' || action === undefined) {
    io.stdout(configHelp);
    return usageExitCode(
      parsed.values.help === true || action === 'help',
      action,
      (a) => a === 'help' || a === 'validate' || a === 'provision' || a === 'publish',
    );
  }
  const [, positionalFile, ...extra] = parsed.positionals;
  if (extra.length > 0 || (positionalFile !== undefined && parsed.values.config !== undefined)) {
    io.stderr('veil config: name one configuration file, as F or --config F\n');
    return 2;
  }
  const file = resolveConfigPath(parsed.values.config ?? positionalFile, io.env, io.cwd);
  if (action === 'validate') {
    const loaded = await loadConfigFile(file);
    const registryUrl = parsed.values.registry ?? io.env.SCHEMA_REGISTRY_URL;
    const all = [...loaded.issues, ...(loaded.config && registryUrl ? await registryIssues(file, loaded.config.pipelines, registryUrl, io.env) : [])];
    for (const issue of all) io.stdout(`${formatIssue(file, issue)}\n`);
    const errors = all.filter((i) => i.severity === 'error').length;
    const warnings = all.length - errors;
    if (errors) {
      io.stderr(`${file}: invalid: ${errors} error(s), ${warnings} warning(s)\n`);
      return 1;
    }
    io.stdout(`${file}: valid${warnings ? ` with ${warnings} warning(s)` : ''}\n`);
    return 0;
  }
  if (action === 'provision' || action === 'publish') {
    const dataDir = resolveDataDir(parsed.values['data-dir'], io.env, io.cwd);
    let control: ControlStore | undefined;
    try {
      control = await openControlStore(io.env, dataDir, (line) => io.stderr(`veil config: ${line}\n`));
      if (action === 'publish') return await publish(file, dataDir, parsed.values.note, control, io);
      const { config } = await requireConfig(file);
      const { keystore, lease } = await openKeystore({
        dataDir,
        env: io.env,
        now: io.now,
        notice: (line) => io.stderr(`veil config: ${line}\n`),
        ...(control ? { control } : {}),
      });
      lease?.stop();
      const created = await provisionKeys(config.engine, keystore);
      io.stdout(created.length ? `created ${created.join(', ')} in ${keystore.path}\n` : `every key of ${file} is in ${keystore.path}\n`);
      return 0;
    } catch (e) {
      io.stderr(`veil config: ${e instanceof VeilError ? `${e.message} [${e.code}]` : 'unexpected error'}\n`);
      return 1;
    } finally {
      await control?.close();
    }
  }
  io.stderr(`veil config: unknown action; expected validate, provision or publish\n`);
  return 2;
};

/** The registry pipelines' mapped paths against their subjects' latest schemas, each issue with its line in the file. */
async function registryIssues(
  file: string,
  pipelines: Parameters<typeof registrySchemaIssues>[0],
  url: string,
  env: Parameters<Command>[1]['env'],
): Promise<ConfigIssue[]> {
  const [{ confluentRegistry, registrySettings }, { registrySchemaIssues: check }] = await Promise.all([
    import('../stream/registry/index.ts'),
    import('../stream/protect/index.ts'),
  ]);
  let registry;
  try {
    registry = confluentRegistry(registrySettings(env, { url })!, { timeoutMs: 5000 });
  } catch {
    return [{ severity: 'warning', pointer: '/pipelines', message: "the schema registry URL is not a URL: mappings not checked against the writers' schemas" }];
  }
  const issues = await check(pipelines, registry);
  // the lines of the pointers, as compileText gives configuration issues theirs
  return compileText(await readFile(file, 'utf8'), () => ({ issues })).issues;
}

/** `veil config publish`: the file, valid, as the newest version of the data dir's (or the shared) history. */
async function publish(
  file: string,
  dataDir: string,
  note: string | undefined,
  control: ControlStore | undefined,
  io: Parameters<Command>[1],
): Promise<number> {
  const loaded = await loadConfigFile(file);
  const errors = loaded.issues.filter((i) => i.severity === 'error');
  if (errors.length) throw new VeilError('CONFIG_INVALID', `configuration ${file} is invalid:\n${errors.map((i) => formatIssue(file, i)).join('\n')}`);
  const versions = await ConfigVersions.open(dataDir);
  let lease: { stop(): void } | undefined;
  let number: number;
  try {
    if (control) {
      // a version in the shared store is authenticated with the key set's control key: open it first
      const opened = await openKeystore({ dataDir, env: io.env, now: io.now, notice: (line) => io.stderr(`veil config: ${line}\n`), control });
      lease = opened.lease;
      await ensureControlKey(opened.keystore);
    }
    await control?.attach({ versions });
    number = await versions.publish(await readFile(file, 'utf8'), {
      by: 'veil config publish',
      source: 'cli',
      note: note ?? `published from ${file}`,
      now: io.now(),
    });
  } finally {
    lease?.stop();
  }
  io.stdout(`published ${file} as version ${number}, now active${control ? ` in ${control.description}` : ` in ${versions.dir}`}\n`);
  return 0;
}
