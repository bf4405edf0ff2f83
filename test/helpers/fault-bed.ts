// The bed the exactly-once fault tests (stream-crash, stream-chaos) run on: a private broker the
// test may pause and restart, raw/clean topics of 4 partitions and a dead-letter topic, a data dir
// with the example configuration and a keyed pipeline, and a kafkajs read_committed verifier that
// records every clean record it reads; after the block, every process the test started is killed
// and all of it removed. (Kafka's Java read_committed client stays the verifier of record.)
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll } from 'vitest';
import { EXAMPLE_CONFIG } from '../../src/env/index.ts';
import { createTopics } from './kafka.ts';
import { pipelineEntry } from './pipeline-yaml.ts';
import { groupCaughtUp } from './stream-processes.ts';
import { privateBroker, type spawnStream } from './processes.ts';

export { groupCaughtUp };

/** a clean record as the kafkajs verifier read it */
export interface VerifiedRecord {
  id: number;
  key: string;
  partition: number;
  offset: bigint;
}

export interface FaultBed {
  readonly broker: Awaited<ReturnType<typeof privateBroker>>;
  readonly kafka: Kafka;
  readonly dataDir: string;
  readonly configFile: string;
  /**
   * By partition and offset: the verifier itself is at-least-once (it may read a record again
   * after the broker restart), so a duplicate is the same id at two offsets, not the same record
   * twice.
   */
  readonly records: Map<string, VerifiedRecord>;
  /** every process the test started, so none outlives it (an orphan could join a later run's group) */
  readonly started: ReturnType<typeof spawnStream>[];
  /** the verified records in topic order (partition, then offset) */
  inTopicOrder(): VerifiedRecord[];
}

/** The bed of pipeline `name` (topics raw.<name>, clean.<name>, dlq.<name>), set up before the calling block's tests. */
export function faultBed(name: string): FaultBed {
  let broker: FaultBed['broker'] | undefined;
  let kafka: Kafka | undefined;
  let dataDir: string | undefined;
  let verifier: ReturnType<Kafka['consumer']> | undefined;
  const records = new Map<string, VerifiedRecord>();
  const started: ReturnType<typeof spawnStream>[] = [];
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the fault bed is read before its beforeAll ran');
    return value;
  };
  beforeAll(async () => {
    broker = await privateBroker(name);
    kafka = new Kafka({
      clientId: `${name}-test`,
      brokers: [broker.brokers],
      logLevel: logLevel.NOTHING,
      retry: { retries: 30, initialRetryTime: 300, maxRetryTime: 3000 },
    });
    await createTopics(kafka, [`raw.${name}`, `clean.${name}`], 4);
    await createTopics(kafka, [`dlq.${name}`], 1);
    dataDir = await mkdtemp(join(tmpdir(), `veil-${name}-`));
    const pipeline = pipelineEntry({ name, raw: `raw.${name}`, clean: `clean.${name}`, dlq: `dlq.${name}`, settings: ['key: { field: Customer.email }'] });
    await writeFile(join(dataDir, 'config.yaml'), `${readFileSync(EXAMPLE_CONFIG, 'utf8')}\npipelines:\n${pipeline}`);
    verifier = kafka.consumer({ groupId: `${name}-verifier`, readUncommitted: false, retry: { retries: 30 } });
    await verifier.connect();
    await verifier.subscribe({ topic: `clean.${name}`, fromBeginning: true });
    await verifier.run({
      eachMessage: async ({ partition, message }) => {
        const v = JSON.parse(message.value!.toString()) as { id: number };
        records.set(`${partition}:${message.offset}`, { id: v.id, key: message.key!.toString(), partition, offset: BigInt(message.offset) });
      },
    });
  }, 300_000);
  afterAll(async () => {
    for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    await verifier?.disconnect().catch(() => undefined);
    await broker?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }, 60_000);
  return {
    get broker() {
      return ready(broker);
    },
    get kafka() {
      return ready(kafka);
    },
    get dataDir() {
      return ready(dataDir);
    },
    get configFile() {
      return join(ready(dataDir), 'config.yaml');
    },
    records,
    started,
    inTopicOrder: () => [...records.values()].sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0)),
  };
}
