import { randomBytes } from 'node:crypto';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SecretKey } from '../../src/engine/index.ts';
import type { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { ensureSubjectKeys } from '../../src/keystore/subject-key-wrapper.ts';
import { openSubjectKeyStore, type SubjectKeyStore } from '../../src/subjects/index.ts';
import { BROKERS, createTopics, kafkaClient } from '../helpers/kafka.ts';
import { readRaw } from './raw-topic.ts';
import { keystoreIn, tempDir } from './helpers.ts';
import { plainConnection } from '../../src/kafka/index.ts';

/** Small segments and a quick cleaner, so compaction runs within seconds in a test. */
export const QUICK_COMPACTION = {
  'segment.ms': '200',
  'segment.bytes': '16384',
  'min.cleanable.dirty.ratio': '0.01',
  'delete.retention.ms': '200',
  'min.compaction.lag.ms': '0',
  // eligible within a second whatever its dirty ratio: the broker's one cleaner thread also serves every other test topic
  'max.compaction.lag.ms': '1000',
};

/** The key set every "host" shares (in production through the control store): a master key and a data dir holding the subject keys' wrapping keys. */
export async function sharedKeySet(): Promise<{ masterHex: string; master: SecretKey; dir: string }> {
  const masterHex = randomBytes(32).toString('hex');
  const master = SecretKey.fromBytes(Buffer.from(masterHex, 'hex'));
  const dir = await tempDir('veil-subjects-keyset-');
  await ensureSubjectKeys(await keystoreIn(dir, master));
  return { masterHex, master, dir };
}

/** A data dir of its own for one process, holding a copy of the shared key set. */
export async function processDir(keySet: { dir: string }): Promise<string> {
  const dir = await tempDir('veil-subjects-proc-');
  await copyFile(join(keySet.dir, 'keystore.json'), join(dir, 'keystore.json'));
  return dir;
}

/** One process's Kafka subject-key store on `dir`. */
export async function openKafkaStore(
  dir: string,
  master: SecretKey,
  topic: string,
  options: { partitions?: number; maxStalenessMs?: number; cacheSize?: number; keystore?: LocalKeystore } = {},
): Promise<SubjectKeyStore> {
  const keystore = options.keystore ?? (await keystoreIn(dir, master));
  return openSubjectKeyStore({
    keystore,
    dataDir: dir,
    ...(options.cacheSize !== undefined ? { cacheSize: options.cacheSize } : {}),
    settings: { kind: 'kafka', connection: plainConnection(BROKERS), topic, partitions: options.partitions ?? 3 },
    maxStalenessMs: options.maxStalenessMs ?? 1000,
    kafka: { topicConfig: QUICK_COMPACTION, pollMs: 100 },
  });
}

/** Every record of `from` copied into a new compacted topic `to`, partition for partition (a backup restored elsewhere): how many. */
export async function copyTopic(from: string, to: string, partitions: number): Promise<number> {
  const kafka = kafkaClient('veil-test-topic-copy');
  await createTopics(kafka, [to], partitions, { 'cleanup.policy': 'compact', ...QUICK_COMPACTION });
  const records = await readRaw(kafka, from);
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic: to, messages: records.map((r) => ({ partition: r.partition, key: Buffer.from(r.key, 'latin1'), value: r.value })) });
  await producer.disconnect();
  return records.length;
}
