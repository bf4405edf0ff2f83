import { VeilError } from '../engine/index.ts';
import type { Env } from '../env/index.ts';
import { subjectKafkaConnection, type KafkaConnection } from '../kafka/index.ts';
import { ensureSubjectKeys, SubjectKeyWrapper, type SubjectKeySource } from '../keystore/index.ts';
import { SubjectsError } from './errors.ts';
import type { KafkaBackendOptions } from './kafka-backend.ts';
import { LazySubjectKeyStore } from './lazy-store.ts';
import { LocalBackend } from './local-backend.ts';
import { SubjectKeys } from './subject-keys.ts';
import type { SubjectKeyStore } from './subject-store.ts';

export const SUBJECT_STORE_ENV = 'VEIL_SUBJECT_STORE';
/** the control store's kind (CONTROL_STORE_ENV of src/control/control-store.ts), read by name: the subjects layer does not reach into control */
const CONTROL_STORE_ENV = 'VEIL_CONTROL_STORE';
/** `true` where the data dir goes with the process (a pod's emptyDir): the Helm chart sets it */
export const DATA_DIR_EPHEMERAL_ENV = 'VEIL_DATA_DIR_EPHEMERAL';
const DEFAULT_TOPIC = 'veil.subjects';

export type SubjectStoreSettings =
  | { kind: 'local' }
  | { kind: 'kafka'; connection: KafkaConnection; topic: string; partitions?: number; replicationFactor?: number; minInsyncReplicas?: number };

export interface OpenSubjectStoreOptions {
  /** the key set: the wrapping and index keys are created in it when absent (LocalKeystore) */
  keystore: SubjectKeySource;
  dataDir: string;
  settings?: SubjectStoreSettings;
  /** unwrapped handles kept per process (default 100,000) */
  cacheSize?: number;
  /** the staleness bound (local default 1,000 ms, Kafka 1,500 ms): an erasure returns after it */
  maxStalenessMs?: number;
  /** Kafka adapter only: more topic settings when created, poll interval, timeouts */
  kafka?: Partial<Omit<KafkaBackendOptions, 'connection' | 'topic' | 'dataDir'>>;
  now?: () => number;
}

/**
 * VEIL_SUBJECT_STORE: `local`, `<data dir>/subjects.db`; `kafka`,
 * the compacted topic VEIL_SUBJECT_TOPIC (default veil.subjects) on VEIL_SUBJECT_BROKERS (else
 * VEIL_CONTROL_BROKERS, else KAFKA_BROKERS) with VEIL_SUBJECT_PARTITIONS partitions when created
 * (default 6), replicated like the control topic (VEIL_CONTROL_REPLICATION_FACTOR, VEIL_CONTROL_MIN_INSYNC_REPLICAS).
 * Unset, it follows the control store: `kafka` when VEIL_CONTROL_STORE=kafka (processes that share
 * configurations and keys share subject keys too), else `local` (the embedded default).
 */
export function subjectStoreSettings(env: Env): SubjectStoreSettings {
  const given = env[SUBJECT_STORE_ENV];
  const kind = given === undefined || given === '' ? (env[CONTROL_STORE_ENV] === 'kafka' ? 'kafka' : 'local') : given;
  if (kind === 'local') return { kind: 'local' };
  if (kind !== 'kafka')
    throw new SubjectsError('SUBJECT_STORE_UNAVAILABLE', `${SUBJECT_STORE_ENV} must be local or kafka, not ${JSON.stringify(kind.slice(0, 32))}`);
  if (!env.VEIL_SUBJECT_BROKERS && !env.VEIL_CONTROL_BROKERS && !env.KAFKA_BROKERS && !env.VEIL_KAFKA_BOOTSTRAP_SERVERS && !env.VEIL_KAFKA_CONFIG_FILE) {
    throw new SubjectsError('SUBJECT_STORE_UNAVAILABLE', `${SUBJECT_STORE_ENV}=kafka needs VEIL_SUBJECT_BROKERS, VEIL_CONTROL_BROKERS or KAFKA_BROKERS`);
  }
  // the cluster and its security: VEIL_SUBJECT_BROKERS with VEIL_SUBJECT_KAFKA_*, else the control store's
  const connection = subjectKafkaConnection(env);
  const count = (name: string, max: number) => {
    const text = env[name];
    if (text === undefined || text === '') return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new SubjectsError('SUBJECT_STORE_UNAVAILABLE', `${name} must be a whole number from 1 to ${max}`);
    return n;
  };
  const replicationFactor = count('VEIL_CONTROL_REPLICATION_FACTOR', 32);
  const minInsyncReplicas = count('VEIL_CONTROL_MIN_INSYNC_REPLICAS', 32);
  return {
    kind: 'kafka',
    connection,
    topic: env.VEIL_SUBJECT_TOPIC ?? DEFAULT_TOPIC,
    partitions: count('VEIL_SUBJECT_PARTITIONS', 1024) ?? 6,
    ...(replicationFactor ? { replicationFactor } : {}),
    ...(minInsyncReplicas ? { minInsyncReplicas } : {}),
  };
}

/** Opens the subject-key store of the settings (default: local); the Kafka adapter reads what this view missed before it returns. */
export async function openSubjectKeyStore(options: OpenSubjectStoreOptions): Promise<SubjectKeyStore> {
  await ensureSubjectKeys(options.keystore);
  const wrapper = new SubjectKeyWrapper(options.keystore);
  const settings = options.settings ?? { kind: 'local' };
  const common = { ...(options.maxStalenessMs !== undefined ? { maxStalenessMs: options.maxStalenessMs } : {}), ...(options.now ? { now: options.now } : {}) };
  if (settings.kind === 'local') {
    return new SubjectKeys(new LocalBackend({ dataDir: options.dataDir, ...common }), wrapper, { cacheSize: options.cacheSize, now: options.now });
  }
  // loaded when used: a process on the local store never loads kafkajs for it
  const { KafkaBackend } = await import('./kafka-backend.ts');
  const { connection, topic, partitions, replicationFactor, minInsyncReplicas } = settings;
  const backend = await KafkaBackend.open({
    ...options.kafka,
    connection,
    topic,
    partitions,
    replicationFactor,
    minInsyncReplicas,
    dataDir: options.dataDir,
    ...common,
  });
  return new SubjectKeys(backend, wrapper, { cacheSize: options.cacheSize, now: options.now });
}

/** A configuration as the refusal reads it: its keys (the engine's compiled ones), some perhaps scoped to the data subject. */
export interface KeyScopes {
  keys: ReadonlyMap<string, { scope?: 'subject' }>;
}

export const scopesToSubject = (config: KeyScopes): boolean => [...config.keys.values()].some((k) => k.scope === 'subject');

/**
 * Why a local subject-key store would split or lose subject keys in this process, or undefined.
 * A process knows it is one of several from VEIL_CONTROL_STORE=kafka (processes share a control
 * store because each has a data dir of its own: a key created in one subjects.db is unknown to
 * the others), and that its data dir goes with it from VEIL_DATA_DIR_EPHEMERAL=true (a pod's
 * emptyDir: the next pod would create new keys, and what was protected under the old ones could
 * never be unprotected). Neither can be seen from inside the process otherwise.
 */
export function unsharedSubjectStore(settings: SubjectStoreSettings, env: Env): string | undefined {
  const ephemeral = env[DATA_DIR_EPHEMERAL_ENV] ?? '';
  if (!['', 'true', 'false'].includes(ephemeral)) throw new VeilError('CONFIG_INVALID', `${DATA_DIR_EPHEMERAL_ENV} must be true or false`);
  if (settings.kind !== 'local') return undefined;
  if (env[CONTROL_STORE_ENV] === 'kafka') return `${CONTROL_STORE_ENV}=kafka: this process is one of several, each with a data dir of its own`;
  if (ephemeral === 'true') return `${DATA_DIR_EPHEMERAL_ENV}=true: the data dir goes with this process`;
  return undefined;
}

function notShared(reason: string, what: string): SubjectsError {
  return new SubjectsError(
    'SUBJECT_STORE_NOT_SHARED',
    `${what}, and the subject-key store is local (${SUBJECT_STORE_ENV}=local) while ${reason}: subject keys would be split or lost. Set ${SUBJECT_STORE_ENV}=kafka (docs/erasure.md)`,
  );
}

/**
 * The store of the settings, opened on first use (a service whose configuration scopes no key to
 * the subject never opens it). With `env`, a local store where it would split or lose keys
 * (unsharedSubjectStore) is refused: at once when `config` scopes a key to the subject — the
 * process does not start — and else when something opens it (a version published later, an erasure).
 */
export function lazySubjectKeyStore(options: OpenSubjectStoreOptions & { env?: Env; config?: KeyScopes }): LazySubjectKeyStore {
  const settings = options.settings ?? { kind: 'local' };
  const description =
    settings.kind === 'local'
      ? `local subject-key store in ${options.dataDir}`
      : `subject-key topic ${settings.topic} on ${settings.connection.brokers.join(',')}`;
  const unshared = options.env ? unsharedSubjectStore(settings, options.env) : undefined;
  if (unshared && options.config && scopesToSubject(options.config)) throw notShared(unshared, 'the configuration scopes keys to the data subject');
  return new LazySubjectKeyStore(description, () =>
    unshared ? Promise.reject(notShared(unshared, 'subject keys are asked for')) : openSubjectKeyStore(options),
  );
}
