// Real `veil stream protect` processes in a describe block: each in a data dir of its own with its
// config.yaml, killed and removed after the block; waits on the consumer group's committed offsets
// (not on time), and a stop that waits for the exit.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll } from 'vitest';
import { BROKERS } from './kafka.ts';
import { spawnStream, waitFor } from './processes.ts';
import { STREAM_MASTER } from './stream.ts';

export type StreamProcess = ReturnType<typeof spawnStream> & { dataDir: string };

export interface StartOptions {
  /** more environment (SCHEMA_REGISTRY_URL, VEIL_LOG_LEVEL, …) over the defaults */
  env?: Record<string, string>;
  /** the operations port (default 0: none the test reads) */
  port?: number;
  /** a data dir made by dir() already (default: a new one) */
  dataDir?: string;
}

/** The processes a describe block starts; afterAll kills what still runs and removes their data dirs. */
export function streamProcesses(): {
  dir(prefix: string): Promise<string>;
  start(prefix: string, configText: string, client: string, options?: StartOptions): Promise<StreamProcess>;
} {
  const dirs: string[] = [];
  const started: StreamProcess[] = [];
  afterAll(async () => {
    for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  const dir = async (prefix: string) => {
    const made = await mkdtemp(join(tmpdir(), `veil-${prefix}-`));
    dirs.push(made);
    return made;
  };
  return {
    dir,
    async start(prefix, configText, client, options = {}) {
      const dataDir = options.dataDir ?? (await dir(prefix));
      await writeFile(join(dataDir, 'config.yaml'), configText);
      const child = spawnStream(['--config', join(dataDir, 'config.yaml'), '--data-dir', dataDir, '--port', String(options.port ?? 0)], {
        ...STREAM_MASTER,
        KAFKA_BROKERS: BROKERS.join(','),
        VEIL_STREAM_CLIENT: client,
        VEIL_KAFKA_SESSION_TIMEOUT_MS: '6000',
        ...options.env,
      });
      const p = Object.assign(child, { dataDir });
      started.push(p);
      return p;
    },
  };
}

/** a group's committed offset of each partition of `topic` (none committed: absent) */
export async function committedOffsets(admin: Admin, groupId: string, topic: string): Promise<Map<number, number>> {
  const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return new Map((offsets?.partitions ?? []).filter((p) => Number(p.offset) >= 0).map((p) => [p.partition, Number(p.offset)]));
}

/** the records a group has consumed of a topic, all partitions together */
export const consumedCount = (offsets: ReadonlyMap<number, number>): number => [...offsets.values()].reduce((n, o) => n + o, 0);

/**
 * Waits until `done` says the process consumed what it should (asked of the groups' committed
 * offsets through `admin`); fails at once, with its output, when the process exits first.
 */
export async function untilConsumed(kafka: Kafka, p: StreamProcess, done: (admin: Admin) => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await waitFor(
      async () => {
        if (p.exitCode !== null) throw new Error(`veil stream protect exited (${p.exitCode}):\n${p.output()}`);
        return done(admin);
      },
      timeoutMs,
      what,
    );
  } finally {
    await admin.disconnect();
  }
}

/** SIGTERM, and the exit */
export async function stopStream(p: StreamProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const closed = new Promise((r) => p.once('close', r));
  p.kill('SIGTERM');
  await closed;
}

/**
 * Whether consumer group `groupId` has committed, on every partition of `topic`, the partition's
 * end offset: every record read and, for a protect pipeline, its transaction committed with what
 * it wrote — nothing of the topic is left for the group to write. (For a topic written without
 * transactions: a transaction marker at its end would sit past the last record's offset.)
 */
export async function groupCaughtUp(kafka: Kafka, groupId: string, topic: string): Promise<boolean> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ends = await admin.fetchTopicOffsets(topic);
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return ends.every((end) => committed?.partitions.find((p) => p.partition === end.partition)?.offset === end.high);
  } finally {
    await admin.disconnect();
  }
}
