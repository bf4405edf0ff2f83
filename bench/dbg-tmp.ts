import { mkdtemp, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import pino from 'pino';
import { openStream } from '/work/main/src/app/open-stream.ts';
const brokers = '127.0.0.1:19092';
const kafka = new Kafka({ clientId: 'dbg', brokers: [brokers], logLevel: logLevel.NOTHING });
const admin = kafka.admin(); await admin.connect();
const run = randomBytes(3).toString('hex');
const src = process.env.TOPIC ?? `dbg.${run}.raw`, sink = `dbg.${run}.clean`;
if (!process.env.TOPIC) await admin.createTopics({ topics: [{ topic: src, numPartitions: 1 }, { topic: sink, numPartitions: 1 }, { topic: sink + '.dlq', numPartitions: 1 }], waitForLeaders: true });
const p = kafka.producer(); await p.connect();
if (!process.env.TOPIC) {
for (let i = 0; i < 20000; i += 1000) await p.send({ topic: src, messages: Array.from({ length: 1000 }, (_, j) => ({ key: 'k' + (i + j), value: JSON.stringify({ id: i + j, email: `c${i + j}@example.com`, card: `4111${String(100000000000 + i + j).padStart(12, '0')}`, name: `Customer Number ${i + j}`, pad: 'x'.repeat(700) }) })) });
}
await p.disconnect();
if (process.env.SEED) { console.log('seeded', src); process.exit(0); }
await admin.createTopics({ topics: [{ topic: sink, numPartitions: 1 }, { topic: sink + '.dlq', numPartitions: 1 }], waitForLeaders: true });
const dataDir = await mkdtemp(join(tmpdir(), 'dbg-'));
const configFile = join(dataDir, 'c.yaml');
await writeFile(configFile, `${readFileSync('/work/main/config/example.yaml', 'utf8')}
pipelines:
  bench:
    source: { topics: [${src}] }
    sink: { topic: ${sink} }
    deadLetterTopic: ${sink}.dlq
    format: json
    groupId: g-${run}
    fields: [ { path: email, field: Customer.email }, { path: card, field: Customer.nationalId }, { path: name, field: Customer.name } ]
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
`);
const t0 = Date.now();
const logger = pino({ level: 'debug' }, { write: (s: string) => { const o = JSON.parse(s); if (!process.env.Q) console.log(Date.now() - t0, o.msg, o.count ?? '', o.from ?? '', o.code ?? '', o.error ?? ''); } } as never);
const stream = await openStream({ configFile, dataDir, env: { VEIL_MASTER_KEY: 'e'.repeat(64) }, now: () => new Date(), brokers: [brokers], development: true, client: process.env.C ?? 'librdkafka', logger });
const cpu0 = process.cpuUsage();
await stream.start();
console.log(Date.now() - t0, 'started');
for (;;) {
  const [e] = await admin.fetchOffsets({ groupId: `g-${run}`, topics: [src] });
  if (Number(e!.partitions[0]!.offset) >= 20000) break;
  await new Promise((r) => setTimeout(r, 100));
}
{ const u = process.cpuUsage(cpu0); console.log(Date.now() - t0, 'drained', 'cpu µs/record', ((u.user + u.system) / 20000).toFixed(1)); }
await stream.stop(); await admin.disconnect();
