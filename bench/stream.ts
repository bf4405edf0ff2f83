// npm run bench:stream — records/s raw → clean for ~1 KB JSON records with 3 protected fields,
// exactly-once on, on 1 and 4 partitions, for both Kafka clients veil runs on (librdkafka, the
// default, and kafkajs): veil protect on each client beside the bare exactly-once consume → produce
// copy of the same client (no veil code), all on the same broker in the same run; and veil on the
// default client against the bare kafkajs copy, so the gain of the switch is visible. Then the
// schema-registry formats (JSON Schema, Protobuf) on 4 partitions, each beside the bare librdkafka
// copy of the same records. And veil on the default client beside the exactly-once copy a Java
// engineer would write with Kafka's own client, tuned and warmed up (bench/stream-java.ts), with
// each one's CPU per record.
// Uses $KAFKA_BROKERS and $SCHEMA_REGISTRY_URL, else starts scripts/test-env.sh start.
// BENCH_RECORDS sets the count timed, BENCH_WARMUP the records each copy handles first, untimed
// (default 20,000: rates and CPU per record are a warm process's).
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import pino from 'pino';
import { openStream } from '../src/app/open-stream.ts';
import { bareLibrdkafka } from './stream-bare-librdkafka.ts';
import { javaCopy, kafkaVersion, type JavaCost } from './stream-java.ts';
import { registeredEncoder, type RegistryFormat } from './stream-formats.ts';
import { protectionFloor } from './stream-protection-floor.ts';
import { fmt, ratio } from './measure.ts';
import { JVM_THREADS, NODE_THREADS, perRecord, processCpu, threadCpu } from './thread-cpu.ts';
import { footprint } from './stream-footprint.ts';

const N = Number(process.env.BENCH_RECORDS ?? 50_000);
// records each copy handles before its timed N (JIT, buffers, connections warm): a long-running
// process's steady cost per record is what scaling a consumer group pays (a cold protection
// thread spends ~50 µs on each of its first 20,000 records, ~10 once warm)
// (none in a short form: a copy of a few thousand records is one or two transactions, and a timed
// part after them could be empty)
const WARM = Number(process.env.BENCH_WARMUP ?? (N >= 20_000 ? 20_000 : 0));
/** partition counts one process owns in the scaling section (issue 42: 4, 32 and 128) */
const SCALE_PARTITIONS = (process.env.BENCH_SCALE_PARTITIONS ?? '4,32,128').split(',').map(Number);
const root = new URL('..', import.meta.url).pathname;
let brokers = process.env.KAFKA_BROKERS;
let registryUrl = process.env.SCHEMA_REGISTRY_URL;
if (!brokers || !registryUrl) {
  const out = execFileSync(join(root, 'scripts/test-env.sh'), ['start'], { encoding: 'utf8' });
  brokers = /KAFKA_BROKERS=(\S+)/.exec(out)![1]!;
  registryUrl = /SCHEMA_REGISTRY_URL=(\S+)/.exec(out)![1]!;
}
const kafka = new Kafka({ clientId: 'bench', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
const admin = kafka.admin();
await admin.connect();
const run = randomBytes(3).toString('hex');

function record(i: number): string {
  return JSON.stringify(customer(i));
}

function customer(i: number): object {
  return {
    id: i,
    email: `customer${i}@example.com`,
    card: `4111${String(100000000000 + i).padStart(12, '0')}`,
    name: `Customer Number ${i}`,
    address: { street: `${i} Long Street`, city: 'Springfield', postcode: 'AB1 2CD', country: 'GB' },
    orders: Array.from({ length: 6 }, (_, j) => ({
      sku: `SKU-${(i * 7 + j) % 1000}`,
      qty: (j % 3) + 1,
      price: 9.99 + j,
      note: 'standard delivery, leave at door',
    })),
    preferences: { newsletter: i % 2 === 0, channel: 'email', locale: 'en-GB', tags: ['retail', 'loyalty', 'web', 'mobile'] },
    padding: 'x'.repeat(180),
  };
}

/**
 * Creates `topic` and waits until each of its partitions has a leader. kafkajs's waitForLeaders (its default)
 * gives up at the first UNKNOWN_TOPIC_OR_PARTITION, which a broker answers for a while about a
 * topic of 128 partitions it is still creating.
 */
async function createTopic(topic: string, partitions: number): Promise<void> {
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: false });
  for (const deadline = Date.now() + 60_000; ;) {
    const led = await admin
      .fetchTopicMetadata({ topics: [topic] })
      .then(({ topics }) => topics[0]!.partitions.filter((p) => p.leader >= 0).length)
      .catch(() => 0);
    if (led === partitions) return;
    if (Date.now() > deadline) throw new Error(`${topic}: ${led} of ${partitions} partitions have a leader after a minute`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function seed(topic: string, partitions: number, encode: (record: object) => Buffer | string = JSON.stringify): Promise<void> {
  await createTopic(topic, partitions);
  // more retries than kafkajs's default 5: the broker may take a moment to host a new topic's 128 partitions
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 15 } });
  await producer.connect();
  for (let i = 0; i < WARM + N; i += 1000) {
    await producer.send({
      topic,
      acks: -1,
      messages: Array.from({ length: Math.min(1000, WARM + N - i) }, (_, j) => ({ key: `k${i + j}`, value: encode(customer(i + j)) })),
    });
  }
  await producer.disconnect();
}

/** Records the group committed on `topic` (its offsets summed over partitions). */
async function committed(groupId: string, topic: string): Promise<number> {
  const [entry] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return entry!.partitions.reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
}

/** CPU milliseconds of this process, or of the copy's own process `pid` (the Java copy's JVM). */
function cpuMs(pid?: number): number {
  if (pid !== undefined) return processCpu(pid) ?? 0;
  const used = process.cpuUsage();
  return (used.user + used.system) / 1000;
}

/**
 * Times a copy after its warm-up: waits until the group committed WARM records of `topic`, then
 * measures until it committed WARM + N — records/s, the copy's share of a core (this process's,
 * or that of `pid` when the copy runs there), and CPU per record by thread group, over the
 * records committed in between.
 */
async function timed(groupId: string, topic: string, pid?: number): Promise<Omit<Cost, 'batches'>> {
  const poll = () => new Promise((r) => setTimeout(r, 50));
  let done = await committed(groupId, topic);
  while (done < WARM) [done] = await Promise.all([committed(groupId, topic), poll()]).then(([d]) => [d]);
  const [start, cpu, before, from] = [performance.now(), cpuMs(pid), threadCpu(pid), done];
  while (done < WARM + N) [done] = await Promise.all([committed(groupId, topic), poll()]).then(([d]) => [d]);
  const wall = performance.now() - start;
  const used = cpuMs(pid) - cpu;
  const records = done - from;
  return {
    rate: records / (wall / 1000),
    cpu: used / wall,
    threads: perRecord(before, threadCpu(pid), records, pid === undefined ? NODE_THREADS : JVM_THREADS),
  };
}

/** What one run cost: this process's CPU (veil or bare kafkajs; the broker is another process) and transactions. */
interface Cost {
  rate: number;
  cpu: number;
  batches: number;
  /** where the CPU went, per record and thread group */
  threads: string;
}

/** Bare kafkajs: transactional consume → produce (per-partition transactional producers), no veil code. */
async function bareKafkajs(source: string, sink: string): Promise<Cost> {
  const groupId = `bench-bare-${source}`;
  const consumer = kafka.consumer({ groupId, readUncommitted: false });
  const producers = new Map<number, ReturnType<Kafka['producer']>>();
  await consumer.connect();
  await consumer.subscribe({ topic: source, fromBeginning: true });
  let batches = 0;
  await consumer.run({
    autoCommit: false,
    partitionsConsumedConcurrently: 4,
    eachBatch: async ({ batch }) => {
      let p = producers.get(batch.partition);
      if (!p) {
        p = kafka.producer({ transactionalId: `${groupId}.${batch.partition}`, idempotent: true, maxInFlightRequests: 1 });
        await p.connect();
        producers.set(batch.partition, p);
      }
      batches++;
      const tx = await p.transaction();
      await tx.send({ topic: sink, messages: batch.messages.map((m) => ({ key: m.key, value: m.value, headers: m.headers })) });
      await tx.sendOffsets({
        consumerGroupId: groupId,
        topics: [{ topic: source, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
      });
      await tx.commit();
    },
  });
  const cost = await timed(groupId, source);
  await consumer.disconnect();
  for (const p of producers.values()) await p.disconnect();
  return { ...cost, batches };
}

/** The example configuration with the bench's one pipeline: what veil runs, and what the protection floor binds. */
/**
 * The bench's pipeline. Its records carry the customer's address (`address.street`), which the
 * guard finds (postal-address): the pipeline passes it by configuration (`allow`), so that the
 * same three fields are protected as in every earlier run and the guard looks at everything else.
 */
function benchConfig(source: string, sink: string, groupId: string, fields: string, format: string, unmapped: string): string {
  return `${readFileSync(join(root, 'config/example.yaml'), 'utf8')}
pipelines:
  bench:
    source: { topics: [${source}] }
    sink: { topic: ${sink} }
    deadLetterTopic: ${sink}.dlq
    format: ${format}
    groupId: ${groupId}
    fields: ${fields}
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
    unmapped: ${unmapped === 'pass' ? 'pass' : `{ action: ${unmapped}, allow: [address] }`}
`;
}

/** veil on `source` → `sink`, timed; `whileRunning` is called once the timed records are committed, before the stream stops. */
async function veil(
  source: string,
  sink: string,
  fields: string,
  label: string,
  client: string,
  format = 'json',
  unmapped = 'dead-letter',
  whileRunning: () => void = () => undefined,
): Promise<Cost> {
  const dataDir = await mkdtemp(join(tmpdir(), 'veil-bench-stream-'));
  const configFile = join(dataDir, 'config.yaml');
  const groupId = `bench-${label}-${source}`;
  await writeFile(configFile, benchConfig(source, sink, groupId, fields, format, unmapped));
  await createTopic(`${sink}.dlq`, 1);
  const stream = await openStream({
    configFile,
    dataDir,
    env: { VEIL_MASTER_KEY: 'e'.repeat(64), VEIL_PROTECT_THREADS: process.env.VEIL_PROTECT_THREADS },
    now: () => new Date(),
    brokers: brokers!.split(','),
    registryUrl,
    development: true,
    client,
    logger: pino({ level: 'error' }),
  });
  await stream.start();
  const cost = await timed(groupId, source);
  whileRunning();
  const histogram = (await stream.metrics.batchLatency.get()).values;
  const batches = histogram.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0;
  await stream.stop();
  await rm(dataDir, { recursive: true, force: true });
  return { ...cost, batches };
}

/** µs of CPU per record: the cores a copy kept busy over the records it copied per second. */
function cpuPerRecord(c: Cost): number {
  return (c.cpu / c.rate) * 1e6;
}

/** veil (4 partitions, librdkafka, JSON) beside the tuned Java copy of the same records, each figure with its ratio. */
function javaTable(java: JavaCost, v: Cost): string[] {
  const met = v.rate / java.rate >= 0.85;
  return [
    'copy                      rec/s     CPU µs/record',
    `tuned Java copy           ${fmt(java.rate).padEnd(10)}${cpuPerRecord(java).toFixed(1)}`,
    `veil on librdkafka        ${fmt(v.rate).padEnd(10)}${cpuPerRecord(v).toFixed(1)}`,
    `veil/Java                 ${ratio(v.rate, java.rate).padEnd(10)}${ratio(cpuPerRecord(v), cpuPerRecord(java))} the CPU per record`,
    `  the Java copy: ${java.threads}`,
    `  veil: ${v.threads}`,
    `  both timed alike: the group's first ${fmt(WARM)} records untimed, then ${fmt(N)} between two counts of its committed offsets (polled every 50 ms; timed over ${(N / java.rate).toFixed(2)} s for the Java copy and ${(N / v.rate).toFixed(2)} s for veil, so a poll's lag weighs more on the shorter); veil's figure is its 4-partition run above. The JVM first: ${java.warmup}`,
    `target: veil ≥ 0.85× the tuned Java copy (rec/s, this run): ${met ? 'met' : 'not met'} (${ratio(v.rate, java.rate)})`,
  ];
}

/** What limits a figure: the process's CPU when it is near one core, else the transactions' round trips. */
function limit(c: Cost): string {
  const perBatch = Math.round((WARM + N) / Math.max(1, c.batches));
  const what =
    c.cpu > 0.85
      ? 'CPU-bound (a core or more: all its threads together — for veil the consumer thread, protection threads and librdkafka threads)'
      : 'waiting on broker round trips';
  return `${Math.round(c.cpu * 100)}% of a core, ${fmt(c.batches)} transactions (warm-up included) of ~${fmt(perBatch)} records: ${what}; ${c.threads}`;
}

console.log(
  `veil bench:stream — Node ${process.version}, ${fmt(N)} records timed after ${fmt(WARM)} of warm-up per copy, ~${Buffer.byteLength(record(1))} bytes JSON, 3 fields protected, exactly-once, one process, broker on loopback\n`,
);
const limits: string[] = [];
const PROTECT = '[ { path: email, field: Customer.email }, { path: card, field: Customer.nationalId }, { path: name, field: Customer.name } ]';
const rows: string[] = [];
const goals: string[] = [];
const guard: string[] = [];
/** CPU per record with the guard off (4 partitions, librdkafka, JSON; median of 3) */
let guardOff = 0;
let javaLines: string[] = [];
/** CPU per record on 4 partitions, librdkafka, JSON: the bare copy's and veil's */
let cpu4: { bare: number; veil: number } | undefined;
console.log('partitions  client       bare copy rec/s   veil protect rec/s   veil/bare (same client)');
for (const partitions of [1, 4]) {
  const topic = (k: string) => `bench.${run}.${partitions}.${k}`;
  await seed(topic('raw'), partitions);
  for (const k of ['bare-kafkajs', 'bare-librdkafka', 'kafkajs', 'librdkafka']) await createTopic(topic(`clean-${k}`), partitions);
  const bk = await bareKafkajs(topic('raw'), topic('clean-bare-kafkajs'));
  const br = await bareLibrdkafka(brokers!, topic('raw'), topic('clean-bare-librdkafka'), timed);
  const vk = await veil(topic('raw'), topic('clean-kafkajs'), PROTECT, 'kafkajs', 'kafkajs');
  const vr = await veil(topic('raw'), topic('clean-librdkafka'), PROTECT, 'librdkafka', 'librdkafka');
  for (const [client, b, v] of [
    ['librdkafka', br, vr],
    ['kafkajs', bk, vk],
  ] as const) {
    const line = `${String(partitions).padEnd(12)}${client.padEnd(13)}${fmt(b.rate).padEnd(18)}${fmt(v.rate).padEnd(21)}${ratio(v.rate, b.rate)}`;
    console.log(line);
    rows.push(line);
    limits.push(`${partitions} partition(s): bare ${client} ${limit(b)}`, `${partitions} partition(s): veil on ${client} ${limit(v)}`);
  }
  goals.push(
    `${partitions} partition(s): veil on librdkafka (default) ${fmt(vr.rate)} rec/s = ${ratio(vr.rate, bk.rate)} the bare kafkajs copy, ${ratio(vr.rate, vk.rate)} veil on kafkajs`,
  );
  if (partitions === 4) {
    cpu4 = { bare: cpuPerRecord(br), veil: cpuPerRecord(vr) };
    // the unmapped guard (default on) against the same pipeline with it off, on the same records:
    // on and off in turn, three times each, each a new group (one pair would weigh the broker's
    // and the scheduler's mood of the moment against the guard)
    const runs: { on: Cost[]; off: Cost[] } = { on: [], off: [] };
    for (let r = 0; r < 3; r++) {
      for (const side of ['on', 'off'] as const) {
        await createTopic(topic(`clean-guard-${side}-${r}`), partitions);
        runs[side].push(
          await veil(
            topic('raw'),
            topic(`clean-guard-${side}-${r}`),
            PROTECT,
            `librdkafka-guard-${side}-${r}`,
            'librdkafka',
            'json',
            side === 'on' ? 'dead-letter' : 'pass',
          ),
        );
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1]!;
    const [onRate, offRate] = [median(runs.on.map((c) => c.rate)), median(runs.off.map((c) => c.rate))];
    const [onCpu, offCpu] = [median(runs.on.map(cpuPerRecord)), median(runs.off.map(cpuPerRecord))];
    guard.push(
      `4 partitions, librdkafka, on (unmapped: dead-letter) and off (unmapped: pass) in turn, 3 runs each: rec/s on ${runs.on.map((c) => fmt(c.rate)).join(', ')}, off ${runs.off.map((c) => fmt(c.rate)).join(', ')}; medians ${fmt(onRate)} and ${fmt(offRate)}: on/off ${ratio(onRate, offRate)}`,
    );
    guard.push(
      `CPU per record (this process, all threads), medians: on ${onCpu.toFixed(1)} µs, off ${offCpu.toFixed(1)} µs: on/off ${ratio(onCpu, offCpu)}; target: the guard's CPU cost ≤ 10% of the guard off (on/off ≤ 1.10×) — ${onCpu / offCpu <= 1.1 ? 'met' : 'not met'}`,
    );
    guardOff = offCpu;
    // Kafka's own Java client on the same records, its warm-up copies to a topic of their own
    for (const k of ['java', 'java-warmup']) await createTopic(topic(`clean-${k}`), partitions);
    const java = await javaCopy(brokers!, topic('raw'), topic('clean-java-warmup'), topic('clean-java'), timed);
    javaLines = javaTable(java, vr);
    limits.push(`4 partitions: the tuned Java copy (its JVM's CPU) ${limit(java)}`);
  }
}
const floorRecords = Array.from({ length: 20_000 }, (_, i) => Buffer.from(record(i)));
const floors = await protectionFloor(benchConfig('raw', 'clean', 'floor', PROTECT, 'json', 'dead-letter'), floorRecords);
const floor = floors.native;
// the guard alone, without Kafka's noise: the same protection with the guard off, beside the one with it on
const floorOff = (await protectionFloor(benchConfig('raw', 'clean', 'floor', PROTECT, 'json', 'pass'), floorRecords)).native;
guard.push(
  `the protection alone (in this thread, no Kafka): on ${floor.toFixed(1)} µs, off ${floorOff.toFixed(1)} µs per record — the guard's ${(floor - floorOff).toFixed(1)} µs are ${(((floor - floorOff) / guardOff) * 100).toFixed(1)}% of the pipeline's CPU per record with the guard off`,
);
const { bare, veil: whole } = cpu4!;
console.log(
  `\nCPU per record, 4 partitions, librdkafka, JSON: veil ${whole.toFixed(1)} µs, the bare copy ${bare.toFixed(1)} µs: ${ratio(whole, bare)} (target ≤ 1.5×: ${whole <= 1.5 * bare ? 'met' : 'not met'})`,
);
console.log(
  `  the protection alone (the pipeline's RecordProtector on the same records in this thread, no Kafka, warm): on the native core ${floor.toFixed(1)} µs per record = ${ratio(floor, bare)} the bare copy's whole CPU per record; on the JavaScript engine ${floors.js.toFixed(1)} µs = ${ratio(floors.js, bare)} (native/JS CPU ${ratio(floor, floors.js)})`,
);
console.log(
  `  the bare copy's work plus the protection alone: ${ratio(bare + floor, bare)} — a pipeline adding nothing else would reach that, and ≤ 1.5× needs the protection and all veil adds within ${(bare / 2).toFixed(1)} µs`,
);
console.log(`\nthe unmapped guard (every unmapped value and key through the detectors):\n${guard.map((g) => `  ${g}`).join('\n')}`);
console.log(
  `\nveil beside Kafka's own Java client: an exactly-once copy with kafka-clients ${kafkaVersion()} (one transaction per poll of up to 5,000 records, offsets sent with the consumer's group metadata, retry.backoff.ms 10), compiled with javac, 4 partitions, the same JSON records:\n${javaLines.join('\n')}`,
);
console.log('\nformats, 4 partitions, librdkafka: the same records framed for a schema registry (raw schema registered)');
console.log('format       bare copy rec/s   veil protect rec/s   veil/bare');
for (const format of ['json-schema', 'protobuf'] as RegistryFormat[]) {
  const topic = (k: string) => `bench.${run}.${format}.${k}`;
  await seed(topic('raw'), 4, await registeredEncoder(registryUrl!, format, `${topic('raw')}-value`));
  for (const k of ['bare', 'veil']) await createTopic(topic(`clean-${k}`), 4);
  const b = await bareLibrdkafka(brokers!, topic('raw'), topic('clean-bare'), timed);
  const v = await veil(topic('raw'), topic('clean-veil'), PROTECT, `librdkafka-${format}`, 'librdkafka', format);
  console.log(`${format.padEnd(13)}${fmt(b.rate).padEnd(18)}${fmt(v.rate).padEnd(21)}${ratio(v.rate, b.rate)}`);
  limits.push(`4 partitions, ${format}: bare librdkafka ${limit(b)}`, `4 partitions, ${format}: veil on librdkafka ${limit(v)}`);
}
console.log(
  "\none process owning more partitions, librdkafka, JSON (issue 42): what it holds while it runs (librdkafka clients, its threads, its connections to the broker, beyond the bench's own before it started) and its rate",
);
console.log('partitions  librdkafka clients  threads  broker connections  rec/s     rec/s vs 4 partitions');
let rateAt4 = 0;
for (const partitions of SCALE_PARTITIONS) {
  const topic = (k: string) => `bench.${run}.scale-${partitions}.${k}`;
  await seed(topic('raw'), partitions);
  await createTopic(topic('clean'), partitions);
  const before = footprint(brokers);
  let held = before;
  const v = await veil(
    topic('raw'),
    topic('clean'),
    PROTECT,
    `librdkafka-scale-${partitions}`,
    'librdkafka',
    'json',
    'dead-letter',
    () => (held = footprint(brokers!)),
  );
  if (partitions === 4) rateAt4 = v.rate;
  const vs4 = rateAt4 > 0 ? ratio(v.rate, rateAt4) : '—';
  console.log(
    `${String(partitions).padEnd(12)}${String(held.clients - before.clients).padEnd(20)}${String(held.threads - before.threads).padEnd(9)}${String(held.connections - before.connections).padEnd(20)}${fmt(v.rate).padEnd(10)}${vs4}`,
  );
  limits.push(`${partitions} partitions (scaling): veil on librdkafka ${limit(v)}`);
}
const largest = SCALE_PARTITIONS.at(-1)!;
console.log(
  `  a transactional producer per owned partition (partition-transactions.ts) besides the consumer and the admin client that reads committed offsets; target: ${largest} partitions within 0.8× of 4 (one producer per process, KIP-447): not built yet`,
);
console.log(`\nthe switch of client:\n${goals.map((g) => `  ${g}`).join('\n')}`);
console.log(
  `\nwhat limits the figures (this process's CPU while it ran; the broker is a separate JVM on the same 2 cores):\n${limits.map((l) => `  ${l}`).join('\n')}`,
);
console.log(
  "\ntargets: veil protect on the default client (librdkafka) ≥ 0.75× its bare copy on 4 partitions; the unmapped guard's CPU cost ≤ 10% (CPU per record on/off ≤ 1.10×); veil ≥ 0.85× the tuned Java copy",
);
await admin.disconnect();
