import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveDataDir } from '../env/index.ts';
import { ConfigVersions, CONTROL_STORE_ENV, controlTopic, controlTopicSettings, ensureControlKey, openKafkaControlLog, signWrite } from '../control/index.ts';
import { openKeystore } from '../app/open-engine.ts';
import { VeilError } from '../engine/index.ts';
import { KEYSTORE_FILE } from '../keystore/index.ts';
import { usageExitCode, type CliIo, type Command } from './io.ts';
import { ControlError } from '../control/errors.ts';

export const storeHelp = `Usage: veil store migrate [--data-dir D]

Copies a local data dir's configuration versions (in order, with their metadata) and its key set
(keystore.json as it is: encrypted, never a clear key) into the Kafka control store that
${CONTROL_STORE_ENV}=kafka, VEIL_CONTROL_TOPIC and VEIL_CONTROL_BROKERS (else KAFKA_BROKERS) name,
then reads the topic back from the beginning with a new reader and checks every version and the
key set byte for byte. The topic must be empty: a store is migrated into once.
Options:
  --data-dir D   default: $VEIL_DATA_DIR, else ./.veil
Exit codes: 0 migrated and verified, 1 refused or failed, 2 usage error.
`;

export const storeCommand: Command = async (args, io) => {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  } catch (e) {
    io.stderr(`veil store: ${(e as Error).message}\n`);
    return 2;
  }
  const action = parsed.positionals[0];
  if (parsed.values.help || action !== 'migrate' || parsed.positionals.length > 1) {
    io.stdout(storeHelp);
    return action === 'migrate' && parsed.positionals.length === 1
      ? 0
      : usageExitCode(parsed.values.help === true || action === 'help', action, (a) => a === 'migrate' || a === 'help');
  }
  try {
    return await migrate(resolveDataDir(parsed.values['data-dir'], io.env, io.cwd), io);
  } catch (e) {
    io.stderr(`veil store: ${e instanceof VeilError ? `${e.message} [${e.code}]` : `unexpected error (${(e as Error).name})`}\n`);
    return 1;
  }
};

async function migrate(dataDir: string, io: CliIo): Promise<number> {
  if (io.env[CONTROL_STORE_ENV] !== 'kafka')
    throw new VeilError('CONFIG_INVALID', `set ${CONTROL_STORE_ENV}=kafka (and the topic and brokers) to name the store to migrate into`);
  const { connection, topic } = controlTopic(io.env);
  const versions = await ConfigVersions.open(dataDir);
  // the versions are authenticated in the store with the key set's control key (added to the key set first)
  const { keystore, lease } = await openKeystore({ dataDir, env: io.env, now: io.now });
  lease?.stop();
  await ensureControlKey(keystore);
  const keyset = await readFile(join(dataDir, KEYSTORE_FILE)).catch(() => undefined);
  const texts = await Promise.all(versions.versions().map(async (v) => ({ meta: v, text: await versions.read(v.number) })));
  const log = await openKafkaControlLog({ ...controlTopicSettings(io.env), connection, topic });
  try {
    if (log.head('config') || log.head('keyset'))
      throw new VeilError('CONFIG_INVALID', `control store topic ${topic} holds versions already: migrate only into an empty store`);
    for (const [i, { meta, text }] of texts.entries()) {
      const accepted = await log.append('config', i, text, { by: meta.by, source: meta.source, note: meta.note }, (w) => signWrite(keystore, w));
      if (accepted?.number !== i + 1) throw new ControlError('CONTROL_STORE_UNAVAILABLE', `another process wrote to ${topic} during the migration`);
    }
    if (keyset && !(await log.append('keyset', 0, keyset.toString('base64'))))
      throw new ControlError('CONTROL_STORE_UNAVAILABLE', `another process wrote to ${topic} during the migration`);
  } finally {
    await log.close();
  }
  // verified by a reader that starts from nothing, as a new process would
  const check = await openKafkaControlLog({ ...controlTopicSettings(io.env), connection, topic });
  try {
    const got = check.state.configs.map((c) => c.write.body);
    if (got.length !== texts.length || got.some((t, i) => t !== texts[i]!.text))
      throw new ControlError('CONTROL_STORE_UNAVAILABLE', `${topic} read back does not hold the data dir's versions`);
    if (keyset && check.state.keyset?.write.body !== keyset.toString('base64'))
      throw new ControlError('CONTROL_STORE_UNAVAILABLE', `${topic} read back does not hold the data dir's key set`);
  } finally {
    await check.close();
  }
  io.stdout(`migrated ${dataDir} into ${topic}: ${texts.length} configuration version(s), ${keyset ? 'the key set' : 'no key set'}; read back and verified\n`);
  return 0;
}
