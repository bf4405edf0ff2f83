// npm run bench:subjects — the subject-key store of issue 29 (src/subjects), each figure beside a
// baseline measured in the same run:
//   1. local store (subjects.db): creations/s (each a durable SQLite commit) beside raw durable
//      inserts of the same rows; warm lookups (handle cache) beside a Map lookup; cold lookups
//      (SQLite read + unwrap, the cache holding none) beside the raw SQLite read;
//   2. a Kafka process view holding BENCH_SUBJECTS subjects (default 20,000; 10,000,000 for the
//      issue's figure): start-up time and RSS of a fresh process opening it (resuming from its
//      stored offsets), beside the same process opening an empty view; cold lookups in it;
//   3. protect and unprotect values/s under subject keys, warm and cold, beside shared keys
//      (bench/subject-transforms.ts);
//   4. erase latency to a second process view: from the erase call to the other view's change
//      notification, beside the staleness bound the erase waits for.
// Uses $KAFKA_BROKERS, else 127.0.0.1:19092 (scripts/test-env.sh start-kafka).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { Kafka, logLevel } from 'kafkajs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretKey } from '../src/engine/index.ts';
import { LocalKeystore } from '../src/keystore/local-keystore.ts';
import { ensureSubjectKeys, SubjectKeyWrapper } from '../src/keystore/subject-key-wrapper.ts';
import { openSubjectKeyStore, type SubjectKeyStore } from '../src/subjects/index.ts';
import { SubjectDb } from '../src/subjects/subject-db.ts';
import { fmt, ratio } from './measure.ts';
import { subjectTransforms } from './subject-transforms.ts';
import { plainConnection } from '../src/kafka/index.ts';

const N = Number(process.env.BENCH_SUBJECTS ?? 20_000);
const OPS = Number(process.env.BENCH_OPS ?? Math.min(N, 20_000));
const BROKERS = (process.env.KAFKA_BROKERS ?? '127.0.0.1:19092').split(',');
const MASTER = process.env.BENCH_MASTER ?? randomBytes(32).toString('hex');
const master = () => SecretKey.fromBytes(Buffer.from(MASTER, 'hex'));
const id = (i: number) => `subject-${i}@example.com`;

async function rate(count: number, fn: (i: number) => unknown): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < count; i++) await fn(i);
  return count / ((performance.now() - start) / 1000);
}

async function keySetDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'veil-bench-subjects-'));
  await ensureSubjectKeys(await LocalKeystore.open({ dataDir: dir, masterKey: master() }));
  return dir;
}

async function local(): Promise<void> {
  const dir = await keySetDir();
  const keystore = await LocalKeystore.open({ dataDir: dir, masterKey: master() });
  const store = await openSubjectKeyStore({ keystore, dataDir: dir, cacheSize: OPS });
  const creates = Math.min(OPS, 2000);
  const created = await rate(creates, (i) => store.keyFor(id(i)));
  const raw = new SubjectDb(join(dir, 'raw.db'));
  const wrapped = randomBytes(64);
  const rawInsert = await rate(creates, (i) =>
    raw.transaction(() => raw.put(Buffer.from(`${i}`.padStart(16, '0')), { gen: 1, live: true, wrapped, at: 0, strays: [] }, false)),
  );
  for (let i = creates; i < OPS; i++) await store.keyFor(id(i));
  const map = new Map(Array.from({ length: OPS }, (_, i) => [id(i), i]));
  const mapGet = await rate(OPS, (i) => map.get(id(i % OPS)));
  const warm = await rate(OPS, (i) => store.keyFor(id(i % OPS)));
  await store.close();
  const coldStore = await openSubjectKeyStore({ keystore, dataDir: dir, cacheSize: 0 });
  const cold = await rate(OPS, (i) => coldStore.existing(id(i % OPS)));
  const rawGet = await rate(OPS, (i) => raw.get(Buffer.from(`${i % creates}`.padStart(16, '0'))));
  await coldStore.close();
  raw.close();
  console.log(`\nlocal store (subjects.db), ${fmt(OPS)} subjects`);
  console.log(`creations/s        ${fmt(created).padStart(10)}   raw durable insert ${fmt(rawInsert).padStart(10)}   ${ratio(created, rawInsert)}`);
  console.log(`warm lookups/s     ${fmt(warm).padStart(10)}   Map.get            ${fmt(mapGet).padStart(10)}   ${ratio(warm, mapGet)}`);
  console.log(`cold lookups/s     ${fmt(cold).padStart(10)}   raw SQLite get     ${fmt(rawGet).padStart(10)}   ${ratio(cold, rawGet)}`);
  await rm(dir, { recursive: true, force: true });
}

/** A view file holding `count` subjects (real wrapped keys), its offsets at the topic's ends: what a process that followed the topic has. */
async function fillView(keySet: string, topic: string, count: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'veil-bench-view-'));
  await copyFile(join(keySet, 'keystore.json'), join(dir, 'keystore.json'));
  const store = await openStore(dir, topic); // creates the topic and the view file, then stops
  await store.keyFor('a-real-record');
  await store.close();
  const wrapper = new SubjectKeyWrapper(await LocalKeystore.open({ dataDir: dir, masterKey: master() }));
  const db = new SubjectDb(join(dir, `subjects-view-${topic}.db`), false);
  const started = performance.now();
  for (let from = 0; from < count; from += 50_000) {
    db.transaction(() => {
      for (let i = from; i < Math.min(count, from + 50_000); i++) {
        const ref = wrapper.refOf(id(i));
        db.put(ref, { gen: 1, live: true, wrapped: wrapper.create(ref, 1).wrapped, at: Date.now(), strays: [] }, false);
      }
    });
    if (count >= 1_000_000 && from % 1_000_000 === 0)
      console.error(`  filled ${fmt(from)} of ${fmt(count)} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  }
  db.close();
  viewBytes = statSync(join(dir, `subjects-view-${topic}.db`)).size;
  return dir;
}
let viewBytes = 0;

function openStore(dir: string, topic: string, cacheSize?: number): Promise<SubjectKeyStore> {
  return LocalKeystore.open({ dataDir: dir, masterKey: master() }).then((keystore) =>
    openSubjectKeyStore({
      keystore,
      dataDir: dir,
      ...(cacheSize !== undefined ? { cacheSize } : {}),
      maxStalenessMs: 1500,
      settings: { kind: 'kafka', connection: plainConnection(BROKERS), topic, partitions: 6 },
      kafka: { pollMs: 100 },
    }),
  );
}

/** In a fresh process: open the view, then look up subjects in it. */
async function viewChild(dir: string, topic: string, count: number): Promise<void> {
  const started = performance.now();
  const store = await openStore(dir, topic, 0);
  const openMs = performance.now() - started;
  const rss = process.memoryUsage().rss;
  const lookups = count ? await rate(Math.min(count, 5000), (i) => store.existing(id((i * 7919) % count))) : 0;
  await store.close();
  console.log(JSON.stringify({ openMs, rssMb: rss / 1e6, lookups }));
}

function inChild(dir: string, topic: string, count: number): { openMs: number; rssMb: number; lookups: number } {
  const out = execFileSync(process.execPath, [import.meta.filename, '--view-child', dir, topic, String(count)], {
    env: { ...process.env, BENCH_MASTER: MASTER },
    encoding: 'utf8',
  });
  return JSON.parse(out.trim().split('\n').pop()!) as { openMs: number; rssMb: number; lookups: number };
}

async function startup(): Promise<void> {
  const keySet = await keySetDir();
  const topic = `veil.bench.subjects-${randomBytes(4).toString('hex')}`;
  const fillStart = performance.now();
  const full = await fillView(keySet, topic, N);
  const fillS = (performance.now() - fillStart) / 1000;
  const fullBytes = viewBytes;
  const empty = await fillView(keySet, topic, 0);
  const base = inChild(empty, topic, 0);
  const big = inChild(full, topic, N);
  console.log(
    `\nKafka process view: a fresh process opening a view its data dir holds (resumes from the stored offsets; view of ${fmt(N)} filled in ${fillS.toFixed(0)} s, ${fmt(fullBytes / 1e6)} MB)`,
  );
  console.log(`subjects in view       open ms   RSS MB   cold lookups/s`);
  console.log(`${fmt(0).padStart(16)}   ${fmt(base.openMs).padStart(11)}   ${fmt(base.rssMb).padStart(6)}`);
  console.log(`${fmt(N).padStart(16)}   ${fmt(big.openMs).padStart(11)}   ${fmt(big.rssMb).padStart(6)}   ${fmt(big.lookups).padStart(14)}`);
  console.log(`start-up ratio (N / empty) ${ratio(big.openMs, base.openMs)}, RSS ratio ${ratio(big.rssMb, base.rssMb)}`);
  await Promise.all([keySet, full, empty].map((d) => rm(d, { recursive: true, force: true })));
}

/** A process with an empty data dir reads a topic of `count` key records (once in its life), beside a bare kafkajs read of the topic. */
async function catchUp(count: number): Promise<void> {
  const keySet = await keySetDir();
  const topic = `veil.bench.subjects-${randomBytes(4).toString('hex')}`;
  const seed = await fillView(keySet, topic, 0);
  const wrapper = new SubjectKeyWrapper(await LocalKeystore.open({ dataDir: keySet, masterKey: master() }));
  const kafka = new Kafka({ clientId: 'bench-subjects', brokers: BROKERS, logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  const writer = '00000000-0000-4000-8000-000000000000';
  for (let from = 0; from < count; from += 5000) {
    const messages = Array.from({ length: Math.min(5000, count - from) }, (_, j) => {
      const ref = wrapper.refOf(id(from + j));
      const hex = ref.toString('hex');
      return {
        key: `k/${hex}/1/${writer}`,
        value: JSON.stringify({ v: 1, gen: 1, w: wrapper.create(ref, 1).wrapped.toString('base64'), at: 0 }),
        partition: Number.parseInt(hex.slice(0, 8), 16) % 6,
      };
    });
    await producer.send({ topic, acks: -1, messages });
  }
  await producer.disconnect();
  const bareStart = performance.now();
  const consumer = kafka.consumer({ groupId: `bench-bare-${randomBytes(4).toString('hex')}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let read = 0;
  await new Promise<void>(
    (resolve) =>
      void consumer.run({
        eachBatch: async ({ batch }) => {
          read += batch.messages.length;
          if (read >= count + 1) resolve();
        },
      }),
  );
  const bareMs = performance.now() - bareStart;
  await consumer.disconnect();
  const empty = await mkdtemp(join(tmpdir(), 'veil-bench-view-'));
  await copyFile(join(keySet, 'keystore.json'), join(empty, 'keystore.json'));
  const fresh = inChild(empty, topic, 0);
  console.log(`\na process with an empty data dir reading a topic of ${fmt(count)} subjects (its first start only)`);
  console.log(
    `records/s ${fmt(count / (fresh.openMs / 1000)).padStart(10)}   bare kafkajs read ${fmt(count / (bareMs / 1000)).padStart(10)}   ${ratio(bareMs, fresh.openMs)}`,
  );
  await Promise.all([keySet, seed, empty].map((d) => rm(d, { recursive: true, force: true })));
}

async function eraseLatency(): Promise<void> {
  const keySet = await keySetDir();
  const topic = `veil.bench.subjects-${randomBytes(4).toString('hex')}`;
  const dirs = await Promise.all(
    [0, 1].map(async () => {
      const dir = await mkdtemp(join(tmpdir(), 'veil-bench-erase-'));
      await copyFile(join(keySet, 'keystore.json'), join(dir, 'keystore.json'));
      return dir;
    }),
  );
  const [a, b] = [await openStore(dirs[0]!, topic), await openStore(dirs[1]!, topic)];
  const seen = new Map<string, number>();
  b.onChange((c) => c.kind === 'erased' && seen.set(c.ref, performance.now()));
  const toOther: number[] = [];
  const call: number[] = [];
  for (let i = 0; i < 10; i++) {
    await b.keyFor(id(i));
    const started = performance.now();
    const erasure = await a.erase(id(i), { by: 'bench', reason: 'bench' });
    call.push(performance.now() - started);
    toOther.push(seen.get(erasure.subject)! - started);
  }
  await Promise.all([a.close(), b.close()]);
  const sorted = (v: number[]) => [...v].sort((x, y) => x - y);
  const p50 = (v: number[]) => sorted(v)[Math.floor(v.length / 2)]!;
  console.log('\nerase latency (10 erasures, Kafka, two process views)');
  console.log(
    `to the other view's cache: p50 ${p50(toOther).toFixed(0)} ms, max ${Math.max(...toOther).toFixed(0)} ms   erase call: p50 ${p50(call).toFixed(0)} ms (staleness bound 1500 ms: ${ratio(p50(call), 1500)})`,
  );
  await Promise.all([keySet, ...dirs].map((d) => rm(d, { recursive: true, force: true })));
}

if (process.argv[2] === '--view-child') {
  await viewChild(process.argv[3]!, process.argv[4]!, Number(process.argv[5]));
} else {
  console.log(`bench:subjects — BENCH_SUBJECTS=${fmt(N)}, ${fmt(OPS)} lookups per figure`);
  await local();
  await subjectTransforms();
  await startup();
  await catchUp(Math.min(N, Number(process.env.BENCH_TOPIC_RECORDS ?? 100_000)));
  await eraseLatency();
}
