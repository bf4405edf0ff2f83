import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_CONFIG } from '../../../src/env/index.ts';
import { BROKERS, createTopics, javaConsumeCommitted, kafkaClient, produce, topicsFor } from '../../helpers/kafka.ts';
import { eventually, freePorts, ROOT, sigtermAndWait } from '../../helpers/processes.ts';
import { samples } from '../../helpers/prometheus.ts';
import { streamClients } from '../../helpers/stream-clients.ts';

const PARTITIONS = 3;
const ROUND = 300;
const MASTER = 'f'.repeat(64);

/** Each partition's high watermark and the group's committed offset of it (-1: none). */
async function offsets(admin: Admin, groupId: string, topic: string): Promise<{ partition: number; high: string; committed: string }[]> {
  const high = await admin.fetchTopicOffsets(topic);
  const committed = (await admin.fetchOffsets({ groupId, topics: [topic] }))[0]!.partitions;
  return high
    .map((h) => ({ partition: h.partition, high: h.high, committed: committed.find((c) => c.partition === h.partition)?.offset ?? '-1' }))
    .sort((a, b) => a.partition - b.partition);
}

/** veil_stream_consumer_lag of a pipeline and topic, per partition, as the process exports it. */
async function lagMetric(port: number, pipeline: string, topic: string): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const s of samples(text))
    if (s.name === 'veil_stream_consumer_lag' && s.labels.pipeline === pipeline && s.labels.topic === topic) out[s.labels.partition!] = s.value;
  return out;
}

/** An aborted transaction at the end of every partition of `topic`: records no read_committed reader gets, and an abort marker. */
async function abortedTail(kafka: Kafka, topic: string, id: string): Promise<void> {
  const producer = kafka.producer({ transactionalId: `lag-abort-${id}`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const tx = await producer.transaction();
  await tx.send({
    topic,
    messages: Array.from({ length: PARTITIONS * 2 }, (_, i) => ({ partition: i % PARTITIONS, value: JSON.stringify({ id: 900_000 + i, aborted: true }) })),
  });
  await tx.abort();
  await producer.disconnect();
}

/**
 * Lag that means what it says (issue 31): a clean topic written by `veil stream protect` ends
 * each partition with transaction markers. A second pipeline reading it, and `veil stream
 * rewrap`, must commit past them once caught up, so that the group's committed offset — what
 * kafka-consumer-groups and KEDA read — equals the high watermark on every partition, and veil's
 * own veil_stream_consumer_lag is 0: the documented "stop rewrap when its lag is 0" fires. An
 * aborted transaction at the end of the topic is skipped the same way. Kafka's Java
 * read_committed client counts the outputs by id: each record once, none lost, through a
 * restart too. Real broker, real processes, both Kafka clients.
 */
describe.each(streamClients())('consumer lag on a transactional topic reaches 0 (%s)', (client) => {
  const t = topicsFor(`lag-${client}`);
  const second = `${t.clean}.second`;
  const rewrapped = `${t.clean}.v2`;
  const groups = { first: `veil-lag-first-${t.id}`, second: `veil-lag-second-${t.id}`, rewrap: `veil-lag-rewrap-${t.id}` };
  const kafka = kafkaClient(`lag-${client}`);
  const admin = kafka.admin();
  let dataDir: string;
  let configFile: string;
  let ports: { protect: number; rewrap: number };
  const children: (ChildProcess & { err(): string })[] = [];

  const veil = (args: string[], port: number) => {
    const child = spawn(join(ROOT, 'bin/veil'), [...args, '--config', configFile, '--data-dir', dataDir, '--port', String(port)], {
      env: {
        ...process.env,
        KAFKA_BROKERS: BROKERS.join(','),
        VEIL_MASTER_KEY: MASTER,
        VEIL_LOG_LEVEL: 'warn',
        VEIL_STREAM_CLIENT: client,
        VEIL_PROTECT_THREADS: '0',
        VEIL_KAFKA_SESSION_TIMEOUT_MS: '6000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // stderr and the log (stdout): what the process said, for a failure's report and the cleartext check
    let err = '';
    child.stdout!.on('data', (d) => (err += String(d)));
    child.stderr!.on('data', (d) => (err += String(d)));
    const out = Object.assign(child, { err: () => err });
    children.push(out);
    return out;
  };
  /** Waits for /readyz; a process that exits or stays unready fails the test with what it said. */
  const ready = async (child: ChildProcess & { err(): string }, port: number) => {
    for (const deadline = Date.now() + 90_000; ;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`the process for :${port} exited (${child.exitCode ?? child.signalCode}): ${child.err().slice(-3000)}`);
      if (
        await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.ok,
          () => false,
        )
      )
        return;
      if (Date.now() > deadline) throw new Error(`the process on :${port} not ready within 90 s: ${child.err().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const startAll = async () => {
    const protect = veil(['stream', 'protect'], ports.protect);
    const rewrap = veil(['stream', 'rewrap', '--pipeline', 'first', '--to', rewrapped, '--role', 'fraud', '--group', groups.rewrap], ports.rewrap);
    await ready(protect, ports.protect);
    await ready(rewrap, ports.rewrap);
    return [protect, rewrap];
  };
  const record = (id: number) => ({ key: `c${id}@example.com`, value: JSON.stringify({ id, email: `c${id}@example.com`, note: `n${id}` }) });
  const idsOf = async (topic: string) => (await javaConsumeCommitted(topic)).map((r) => (JSON.parse(r.value) as { id: number }).id);
  /** the high watermark minus the committed offset of every partition a group reads, once it is settled */
  const settledLag = async (groupId: string, topic: string) => {
    const lagOf = async () => (await offsets(admin, groupId, topic)).map((o) => Number(BigInt(o.high) - BigInt(o.committed)));
    await eventually(`${groupId} caught up on ${topic}`, async () => ((await lagOf()).every((l) => l === 0) ? true : undefined), 30_000).catch(() => undefined);
    return lagOf();
  };

  /** ids read so far from a topic (kafkajs, read_committed: progress only; Kafka's Java client checks the result) */
  const watch = async (topic: string) => {
    const ids = new Set<number>();
    const consumer = kafka.consumer({ groupId: `watch-${topic}`, readUncommitted: false });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachBatch: async ({ batch }) => void batch.messages.forEach((m) => ids.add((JSON.parse(m.value!.toString()) as { id: number }).id)) });
    return { ids, stop: () => consumer.disconnect() };
  };
  let watched: { ids: Set<number>; stop(): Promise<void> }[] = [];

  /** Drains, then checks offsets, the metric and the outputs; `total` records sent so far. */
  const drainedAndChecked = async (total: number) => {
    await eventually('both outputs complete', async () => (watched.every((w) => w.ids.size >= total) ? true : undefined), 180_000);
    const zero = Array.from({ length: PARTITIONS }, () => 0);
    // committed == high watermark on every partition of every topic read (raw is not transactional: trivially so)
    expect({
      first: await settledLag(groups.first, t.raw),
      second: await settledLag(groups.second, t.clean),
      rewrap: await settledLag(groups.rewrap, t.clean),
    }).toEqual({ first: zero, second: zero, rewrap: zero });
    // veil's own metric says the same (it is set as each commit returns)
    const every = Object.fromEntries(Array.from({ length: PARTITIONS }, (_, p) => [String(p), 0]));
    const metrics = async () => ({
      second: await lagMetric(ports.protect, 'second', t.clean),
      first: await lagMetric(ports.protect, 'first', t.raw),
      rewrap: await lagMetric(ports.rewrap, 'first', t.clean),
    });
    const want = { second: every, first: every, rewrap: every };
    await eventually('veil_stream_consumer_lag 0', async () => (JSON.stringify(await metrics()) === JSON.stringify(want) ? true : undefined), 10_000).catch(
      () => undefined,
    );
    expect(await metrics()).toEqual(want);
    for (const topic of [second, rewrapped]) {
      const ids = await idsOf(topic);
      const unique = new Set(ids);
      const lost = Array.from({ length: total }, (_, i) => i).filter((i) => !unique.has(i)).length;
      expect({ topic, records: ids.length, duplicated: ids.length - unique.size, lost, aborted: ids.filter((i) => i >= 900_000).length }).toEqual({
        topic,
        records: total,
        duplicated: 0,
        lost: 0,
        aborted: 0,
      });
    }
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-lag-'));
    configFile = join(dataDir, 'config.yaml');
    const common = `    deadLetterTopic: ${t.dlq}
    format: json
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }`;
    await writeFile(
      configFile,
      `${await readFile(EXAMPLE_CONFIG, 'utf8')}
pipelines:
  first:
    source: { topics: [${t.raw}] }
    sink: { topic: ${t.clean} }
    groupId: ${groups.first}
    fields: [ { path: email, field: Customer.email } ]
    key: { field: Customer.email }
${common}
  second:
    source: { topics: [${t.clean}] }
    sink: { topic: ${second} }
    groupId: ${groups.second}
    fields: [ { path: note, field: Customer.name } ]
${common}
`,
    );
    await createTopics(kafka, [t.raw, t.clean, second, rewrapped], PARTITIONS);
    await createTopics(kafka, [t.dlq], 1);
    await admin.connect();
    watched = await Promise.all([watch(second), watch(rewrapped)]);
    const [a, b] = await freePorts(2).then((p) => [p, p + 1]);
    ports = { protect: a!, rewrap: b! };
  }, 120_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const w of watched) await w.stop().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('commits past the transaction markers and an aborted tail: committed offset == high watermark, lag 0, every record once, also after a restart', async () => {
    let running = await startAll();
    try {
      await produce(
        kafka,
        t.raw,
        Array.from({ length: ROUND }, (_, i) => record(i)),
      );
      await drainedAndChecked(ROUND);

      // an aborted transaction at the end of the clean topic: nothing of it is read, and it is committed past
      await abortedTail(kafka, t.clean, t.id);
      await drainedAndChecked(ROUND);

      // a restart starts from the committed offsets: nothing read twice, the next records once
      for (const child of running) expect((await sigtermAndWait(child, 40_000)).code).toBe(0);
      running = await startAll();
      await produce(
        kafka,
        t.raw,
        Array.from({ length: ROUND }, (_, i) => record(ROUND + i)),
      );
      await drainedAndChecked(2 * ROUND);
      for (const child of running) expect((await sigtermAndWait(child, 40_000)).code).toBe(0);
    } catch (e) {
      // what the processes said (codes and offsets, never values)
      for (const child of running) console.log(child.err().split('\n').slice(-40).join('\n'));
      throw e;
    }
    for (const child of children) expect(child.err()).not.toContain('@example.com');
  }, 420_000);
});
