// npm run bench:store — the shared control store and the KMS-held KEK:
//   1. start-up: how long a process with an empty data dir takes to read a Kafka control store of
//      BENCH_VERSIONS configuration versions and as many key-set versions (each a whole encrypted
//      keystore document, each encrypted anew) and mirror them into its data dir, then open the
//      newest key set that opens under its KEK, beside a bare kafkajs read of the same topic in
//      the same run;
//   2. unprotect throughput (AES-GCM, 1,000-value batches) with keys wrapped by a KMS KEK — the
//      envelope key set, its lease, the KEK behind the retry and cache decorators — as a ratio of
//      the same with the keystore under the master key: the KMS is off the hot path (goal ≥ 0.95×).
//      The KMS adapter here is the master-key one (no network): the hot path is the same for every
//      adapter, which only the lease's background renewals call.
// Uses $KAFKA_BROKERS, else starts scripts/test-env.sh start-kafka.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { compileVeilConfigText } from '../src/app/config-file.ts';
import { provisionKeys } from '../src/keystore/config-keys.ts';
import { ensureControlKey, openControlStore, signWrite } from '../src/control/index.ts';
import { Engine, SecretKey } from '../src/engine/index.ts';
import { KeyLease } from '../src/keystore/key-lease.ts';
import { cachingKms, retryingKms } from '../src/keystore/kms/kms-decorators.ts';
import { masterKeyKms } from '../test/helpers/master-key-kms.ts';
import { decodeKeystore, encodeKeystore } from '../src/keystore/keystore-format.ts';
import { opensUnder } from '../src/keystore/keyset-open.ts';
import { LocalKeystore } from '../src/keystore/local-keystore.ts';
import { KafkaControlLog } from '../src/control/kafka-control-log.ts';
import { fmt, opsPerSecond, ratio } from './measure.ts';
import { plainConnection } from '../src/kafka/index.ts';

const VERSIONS = Number(process.env.BENCH_VERSIONS ?? 1000);
const root = new URL('..', import.meta.url).pathname;
let brokers = process.env.KAFKA_BROKERS;
if (!brokers) brokers = /KAFKA_BROKERS=(\S+)/.exec(execFileSync(join(root, 'scripts/test-env.sh'), ['start-kafka'], { encoding: 'utf8' }))![1]!;
const brokerList = brokers.split(',');
const topic = `bench.control.${randomBytes(3).toString('hex')}`;
const exampleText = await readFile(join(root, 'config/example.yaml'), 'utf8');
const config = compileVeilConfigText(exampleText).config!;

console.log(`veil bench:store — Node ${process.version}, ${fmt(VERSIONS)} configuration versions and ${fmt(VERSIONS)} key-set versions, broker on loopback\n`);

// seed: the versions a long-lived deployment accumulates (every write read back, as processes do)
const seedDir = await mkdtemp(join(tmpdir(), 'veil-bench-store-seed-'));
const masterBytes = randomBytes(32);
const master = SecretKey.fromBytes(masterBytes);
const seedKeystore = await LocalKeystore.open({ dataDir: seedDir, masterKey: master });
await provisionKeys(config.engine, seedKeystore);
// configuration versions are signed with the key set's control key: a process mirrors only those whose MAC verifies
await ensureControlKey(seedKeystore);
const keysetRecords = decodeKeystore(await readFile(seedKeystore.path), masterBytes, seedKeystore.path);
const seedStart = performance.now();
const seed = await KafkaControlLog.open({ connection: plainConnection(brokerList), topic });
for (let i = 0; i < VERSIONS; i++) {
  await seed.append('config', i, `${exampleText}\n# version ${i + 1}\n`, { by: 'bench', source: 'cli', note: `version ${i + 1}` }, (w) =>
    signWrite(seedKeystore, w),
  );
  // each version encrypted anew (its own salt and nonce), as every change writes it: no two alike
  await seed.append('keyset', i, encodeKeystore(keysetRecords, masterBytes).toString('base64'));
}
await seed.close();
console.log(`seeded ${fmt(2 * VERSIONS)} writes in ${fmt(performance.now() - seedStart)} ms`);

// 1. start-up of a process on an empty data dir
const dataDir = await mkdtemp(join(tmpdir(), 'veil-bench-store-'));
const startupStart = performance.now();
const control = await openControlStore({ VEIL_CONTROL_STORE: 'kafka', VEIL_CONTROL_TOPIC: topic, KAFKA_BROKERS: brokers }, dataDir);
// as openKeystore does: the newest key-set version that opens under the KEK, then the keystore on it
await control!.settle((document) => opensUnder(document, { masterKey: master }));
const opened = await LocalKeystore.open({ dataDir, masterKey: master });
// the configuration versions read are authenticated and mirrored once the key set is open
await control!.attach({ keystore: opened });
const startupMs = performance.now() - startupStart;
await control!.close();
if (opened.list().length !== seedKeystore.list().length) throw new Error('the mirrored key set is not the seeded one');
const mirrored = await readFile(join(dataDir, 'config-versions/index.json'), 'utf8');
if (!mirrored.includes(`"active": ${VERSIONS}`)) throw new Error('the mirror does not hold the last version');

const kafka = new Kafka({ clientId: 'bench-store', brokers: brokerList, logLevel: logLevel.NOTHING });
const bareStart = performance.now();
const consumer = kafka.consumer({ groupId: `bench-bare-${topic}` });
await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: true });
let read = 0;
await new Promise<void>((resolve) => void consumer.run({ eachMessage: async () => void (++read >= 2 * VERSIONS && resolve()) }));
const bareMs = performance.now() - bareStart;
await consumer.disconnect();
console.log('\nstart-up, empty data dir                          ms');
console.log(`bare kafkajs read of the topic                    ${fmt(bareMs)}`);
console.log(`veil: read, resolve, mirror, open the key set     ${fmt(startupMs)}  (${ratio(startupMs, bareMs)} the bare read)`);

// 2. unprotect with KMS-wrapped keys against master-key-wrapped keys
const kmsDir = await mkdtemp(join(tmpdir(), 'veil-bench-store-kms-'));
const direct = retryingKms(masterKeyKms(SecretKey.fromBytes(randomBytes(32))));
const kmsKeystore = await LocalKeystore.open({ dataDir: kmsDir, kms: cachingKms(direct, { ttlMs: 300_000 }) });
await provisionKeys(config.engine, kmsKeystore);
const lease = new KeyLease({ kms: direct, wrapped: () => kmsKeystore.wrappedDataKey(), ttlMs: 300_000 }).start();
kmsKeystore.useLease(lease);
const bind = (keys: LocalKeystore, action: 'Protect' | 'Unprotect') =>
  new Engine({ config: config.engine, keys }).bind({
    identity: { roles: ['fraud'] },
    rightsEvidences: [{ name: 'Role', value: 'fraud' }],
    processingEvidences: [{ name: 'Action', value: action }],
    fields: [{ className: 'Customer', propertyName: 'name' }],
  }).transforms[0]!;
const batchOf = (keys: LocalKeystore) => bind(keys, 'Protect').many(Array.from({ length: 1000 }, (_, i) => `Customer Number ${i}`)) as string[];
const masterBatch = batchOf(seedKeystore);
const kmsBatch = batchOf(kmsKeystore);
const unprotectMaster = bind(seedKeystore, 'Unprotect');
const unprotectKms = bind(kmsKeystore, 'Unprotect');
const ms = Number(process.env.BENCH_MS ?? 2000);
const rates = { master: 0, kms: 0 };
for (let round = 0; round < 3; round++) {
  rates.master = Math.max(
    rates.master,
    opsPerSecond(() => unprotectMaster.many(masterBatch), 1000, ms),
  );
  rates.kms = Math.max(
    rates.kms,
    opsPerSecond(() => unprotectKms.many(kmsBatch), 1000, ms),
  );
}
lease.stop();
console.log('\nunprotect, AES-GCM, 1,000-value batches, one core   values/s');
console.log(`keys under the master key (baseline)               ${fmt(rates.master)}`);
console.log(`keys under a KMS KEK (envelope, lease renewing)    ${fmt(rates.kms)}  (${ratio(rates.kms, rates.master)} the baseline)`);
console.log('\ntarget: unprotect with KMS-wrapped keys ≥ 0.95× master-key-wrapped keys (the KMS is off the hot path)');
await Promise.all([seedDir, dataDir, kmsDir].map((d) => rm(d, { recursive: true, force: true })));
