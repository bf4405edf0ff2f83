import { ConfigVersions, type VersionMeta } from './config-versions.ts';
import { readFile } from 'node:fs/promises';
import { VeilError } from '../engine/index.ts';
import { ensureKey, LocalKeystore, macVerifies, macWith } from '../keystore/index.ts';
import { authInput, CONTROL_MAC_KEY } from './control-auth.ts';
import type { Accepted, ControlWrite, History } from './control-log.ts';
import type { Env } from '../env/index.ts';
import { controlKafkaConnection, type KafkaConnection } from '../kafka/index.ts';
import { KeysetMirror, type KeysetJudge } from './keyset-mirror.ts';
import { VersionMirror } from './version-mirror.ts';

export const CONTROL_STORE_ENV = 'VEIL_CONTROL_STORE';
const DEFAULT_TOPIC = 'veil.control';

/** The control store a process shares with the others, mirrored into its data dir. */
export interface ControlStore {
  readonly description: string;
  /**
   * Configuration publishes and key-set changes go to the shared log from now on. With the
   * keystore, the configuration versions read so far are authenticated and mirrored (awaited:
   * the data dir then holds every authenticated version read, and no other).
   */
  attach(parts: { versions?: ConfigVersions; keystore?: LocalKeystore }): Promise<void>;
  /**
   * Before the keystore opens: keystore.json becomes the newest key-set version read so far that
   * opens under this KEK (KeysetMirror); later versions are judged as they arrive.
   */
  settle(judge: KeysetJudge): Promise<void>;
  /** whether this process still follows the store (health) */
  status(): { following: boolean; reason?: string };
  close(): Promise<void>;
}

/**
 * VEIL_CONTROL_STORE selects where configuration versions and key sets live: unset or `local`,
 * the data dir alone (the embedded default); `kafka`, the compacted topic VEIL_CONTROL_TOPIC
 * (default veil.control) on VEIL_CONTROL_BROKERS (else KAFKA_BROKERS), read from the beginning
 * here and then followed. Every accepted version is written into the data dir as it arrives —
 * config-versions/ and keystore.json are its mirror — so everything that reads the data dir
 * (the engine, the active-version watch, the portal) follows the other processes' writes.
 */
export async function openControlStore(env: Env, dataDir: string, notice?: (message: string) => void): Promise<ControlStore | undefined> {
  const kind = env[CONTROL_STORE_ENV];
  if (kind === undefined || kind === '' || kind === 'local') return undefined;
  if (kind !== 'kafka') throw new VeilError('CONFIG_INVALID', `${CONTROL_STORE_ENV} must be local or kafka, not ${JSON.stringify(kind.slice(0, 32))}`);
  const { connection, topic } = controlTopic(env);
  const { KafkaControlLog } = await import('./kafka-control-log.ts');
  const keysets = new KeysetMirror(dataDir, notice);
  const configs = new VersionMirror(await ConfigVersions.open(dataDir), notice);
  const log = await KafkaControlLog.open({
    ...controlTopicSettings(env),
    connection,
    topic,
    onAccepted: await dataDirMirror(dataDir, keysets, configs),
    ...(notice ? { warn: notice } : {}),
  });
  return controlStoreOver(log, `Kafka topic ${topic} on ${connection.brokers.join(',')}`, keysets, configs);
}

/** What the control store needs of its log (KafkaControlLog; an in-memory one in unit tests). */
export interface AppendLog {
  head(history: History): number;
  append(
    history: History,
    basedOn: number,
    body: string,
    meta?: ControlWrite['meta'],
    sign?: (w: ControlWrite) => ControlWrite['auth'],
  ): Promise<Accepted | undefined>;
  status?(): { following: boolean; reason?: string };
  close(): Promise<void>;
}

/**
 * Writes accepted versions into the data dir: config-versions/ and keystore.json are the log's
 * mirror; key sets through `keysets` (only those that open under the KEK) and configuration
 * versions through `configs` (only those whose MAC verifies); without them (tests of the log
 * alone, a migration into an empty store), as they come.
 */
export async function dataDirMirror(dataDir: string, keysets?: KeysetMirror, configs?: VersionMirror): Promise<(entry: Accepted) => Promise<void>> {
  const mirror = await ConfigVersions.open(dataDir);
  return async (entry) => {
    const w = entry.write;
    if (entry.history === 'keyset') {
      return keysets ? keysets.accept(entry.number, w) : LocalKeystore.mirror(dataDir, Buffer.from(w.body, 'base64'));
    }
    if (configs) return configs.accept(entry);
    const meta = w.meta ?? { by: 'unknown', source: 'portal' as const, note: '' };
    const auth =
      w.auth && typeof w.auth.key === 'number' && typeof w.auth.mac === 'string'
        ? { auth: { key: w.auth.key, mac: w.auth.mac, basedOn: w.basedOn, writer: w.writer, meta: w.meta !== undefined } }
        : {};
    await mirror.mirror(entry.number, w.body, { publishedAt: w.at, by: meta.by, source: meta.source, note: meta.note, ...auth });
  };
}

/**
 * A configuration write's MAC under the key set's control key (the key bytes stay in the keystore
 * module). Without that key nothing can be published to the shared store.
 */
export function signWrite(keys: LocalKeystore, w: ControlWrite): NonNullable<ControlWrite['auth']> {
  const { version, mac } = macWith(keys, CONTROL_MAC_KEY, authInput(w));
  return { key: version, mac: mac.toString('base64url') };
}

/**
 * Whether a configuration version mirrored from the shared store carries a MAC that verifies
 * under the key set's control key: only such versions run. A version written to the topic by
 * anyone without the key set (a forged one, or one of another store) does not.
 */
export async function versionIsAuthentic(versions: ConfigVersions, number: number, keys: LocalKeystore): Promise<boolean> {
  const meta = versions.versions().find((v) => v.number === number);
  if (!meta?.auth) return false;
  return mirroredIsAuthentic(keys, meta, await readFile(versions.file(number), 'utf8'));
}

/** Whether a mirrored version (its index entry and text) is the write the shared log authenticated. */
export function mirroredIsAuthentic(keys: LocalKeystore, meta: VersionMeta, text: string): boolean {
  if (!meta.auth) return false;
  return writeIsAuthentic(keys, {
    v: 1,
    history: 'config',
    basedOn: meta.auth.basedOn,
    writer: meta.auth.writer,
    at: meta.publishedAt,
    body: text,
    ...(meta.auth.meta ? { meta: { by: meta.by, source: meta.source, note: meta.note } } : {}),
    auth: { key: meta.auth.key, mac: meta.auth.mac },
  });
}

/** Whether a write carries a MAC that verifies under the key set's control key (any version it holds). */
export function writeIsAuthentic(keys: LocalKeystore, w: ControlWrite): boolean {
  return (
    w.auth !== undefined &&
    typeof w.auth.key === 'number' &&
    typeof w.auth.mac === 'string' &&
    macVerifies(keys, CONTROL_MAC_KEY, authInput(w), w.auth.key, Buffer.from(w.auth.mac, 'base64url'))
  );
}

/** The store over a log: publishes (signed with the attached keystore's control key) and key-set commits of the attached parts become appends. */
export function controlStoreOver(log: AppendLog, description: string, keysets?: KeysetMirror, configs?: VersionMirror): ControlStore {
  let signer: LocalKeystore | undefined;
  const sign = (w: ControlWrite) => {
    if (!signer) throw new VeilError('KEY_UNAVAILABLE', 'the key set is not open: a configuration version cannot be authenticated');
    return signWrite(signer, w);
  };
  // a MAC under a control key this process has not loaded yet (rotated elsewhere): the key set is
  // re-read once per key-set version mirrored since, never once per record a forger writes
  let loadedKeyset = keysets?.status().mirrored;
  const verifies = async (check: (keys: LocalKeystore) => boolean) => {
    if (!signer) return false;
    if (check(signer)) return true;
    const mirrored = keysets?.status().mirrored;
    if (mirrored === loadedKeyset) return false;
    loadedKeyset = mirrored;
    await signer.reload();
    return check(signer);
  };
  return {
    description,
    async attach({ versions, keystore }) {
      if (keystore) signer = keystore;
      versions?.useLog({
        publish: async (text, meta) => (await log.append('config', log.head('config'), text, meta, sign))?.number,
        authentic: (meta, text) => verifies((keys) => mirroredIsAuthentic(keys, meta, text)),
      });
      if (!keystore) return;
      loadedKeyset = keysets?.status().mirrored;
      // a key-set change is signed with the control key of the key set it was based on (none yet: unsigned)
      const signKeyset = (w: ControlWrite) => (keystore.info(CONTROL_MAC_KEY) ? signWrite(keystore, w) : undefined);
      keystore.useLog({
        head: () => log.head('keyset'),
        commit: async (document, basedOn) => (await log.append('keyset', basedOn, document.toString('base64'), undefined, signKeyset)) !== undefined,
        current: () => keysets?.current() ?? true,
      });
      keysets?.attach({ opens: (document) => keystore.opens(document), authentic: (w) => writeIsAuthentic(keystore, w) });
      await configs?.attach((w) => verifies((keys) => writeIsAuthentic(keys, w)));
    },
    settle: async (judge) => keysets?.settle(judge),
    status: () => log.status?.() ?? { following: true },
    close: () => log.close(),
  };
}

/**
 * The Kafka control store's cluster — VEIL_CONTROL_BROKERS with VEIL_CONTROL_KAFKA_* (another
 * cluster), else the main one's (KAFKA_BROKERS or bootstrap.servers, VEIL_KAFKA_*) — and its topic
 * (VEIL_CONTROL_TOPIC).
 */
export function controlTopic(env: Env): { connection: KafkaConnection; topic: string } {
  if (!env.VEIL_CONTROL_BROKERS && !env.KAFKA_BROKERS && !env.VEIL_KAFKA_BOOTSTRAP_SERVERS && !env.VEIL_KAFKA_CONFIG_FILE) {
    throw new VeilError('CONFIG_INVALID', `${CONTROL_STORE_ENV}=kafka needs VEIL_CONTROL_BROKERS or KAFKA_BROKERS`);
  }
  return { connection: controlKafkaConnection(env), topic: env.VEIL_CONTROL_TOPIC ?? DEFAULT_TOPIC };
}

/**
 * VEIL_CONTROL_REPLICATION_FACTOR and VEIL_CONTROL_MIN_INSYNC_REPLICAS: the control topic's
 * replication when veil creates it (both unset: the broker's defaults), and what an existing
 * topic is checked against (a warning at start when it has less).
 */
export function controlTopicSettings(env: Env): { replicationFactor?: number; minInsyncReplicas?: number } {
  const count = (name: string) => {
    const text = env[name];
    if (text === undefined || text === '') return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1 || n > 32) throw new VeilError('CONFIG_INVALID', `${name} must be a whole number from 1 to 32`);
    return n;
  };
  const replicationFactor = count('VEIL_CONTROL_REPLICATION_FACTOR');
  const minInsyncReplicas = count('VEIL_CONTROL_MIN_INSYNC_REPLICAS');
  if (replicationFactor !== undefined && minInsyncReplicas !== undefined && minInsyncReplicas > replicationFactor) {
    throw new VeilError(
      'CONFIG_INVALID',
      'VEIL_CONTROL_MIN_INSYNC_REPLICAS must not exceed VEIL_CONTROL_REPLICATION_FACTOR: no write to the control topic could be acknowledged',
    );
  }
  return { ...(replicationFactor ? { replicationFactor } : {}), ...(minInsyncReplicas ? { minInsyncReplicas } : {}) };
}

/** The key set's control key (hmac-sha256), created by the first process that finds none; a racing creator's key is taken. */
export async function ensureControlKey(keystore: LocalKeystore): Promise<void> {
  await ensureKey(keystore, CONTROL_MAC_KEY, 'hmac-sha256');
}
