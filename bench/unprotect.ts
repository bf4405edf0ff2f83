// npm run bench:unprotect — round-trip latency (p50/p99) and requests/s of unprotect over Kafka
// with 1 and 16 concurrent requesters on loopback, beside a bare kafkajs ping-pong (producer →
// echo consumer → reply consumer) on the same broker in the same run. Target: p99 < 50 ms with 16.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import pino from 'pino';
import { openResponders } from '../src/app/open-responders.ts';
import { openEngine } from '../src/app/open-engine.ts';
import { JwtSigner } from '../src/keystore/jwt-signer.ts';
import { openKafkaPort, plainConnection } from '../src/kafka/index.ts';
import { UnprotectClient } from '../src/stream/unprotect/index.ts';
import { fmt } from './measure.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const root = new URL('..', import.meta.url).pathname;
let brokers = process.env.KAFKA_BROKERS;
if (!brokers) brokers = /KAFKA_BROKERS=(\S+)/.exec(execFileSync(join(root, 'scripts/test-env.sh'), ['start-kafka'], { encoding: 'utf8' }))![1]!;
const kafka = new Kafka({ clientId: 'bench-unprotect', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
const admin = kafka.admin();
await admin.connect();
const run = randomBytes(3).toString('hex');
const t = (k: string) => `bench.unprotect.${run}.${k}`;
await admin.createTopics({ topics: ['requests', 'replies', 'dlq', 'ping', 'pong'].map((k) => ({ topic: t(k), numPartitions: 2 })), waitForLeaders: true });

const percentile = (xs: number[], p: number) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

/** `concurrency` requesters, each sending its next request as soon as the previous is answered. */
async function load(concurrency: number, once: () => Promise<void>): Promise<{ rps: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const start = performance.now();
        await once();
        latencies.push(performance.now() - start);
      }
    }),
  );
  return { rps: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

// bare kafkajs ping-pong
const echo = kafka.consumer({ groupId: `bench-echo-${run}` });
const echoProducer = kafka.producer();
await Promise.all([echo.connect(), echoProducer.connect()]);
await echo.subscribe({ topic: t('ping') });
await echo.run({
  eachBatch: async ({ batch }) =>
    void (await echoProducer.send({ topic: t('pong'), messages: batch.messages.map((m) => ({ key: m.key, value: m.value, headers: m.headers })) })),
});
const pending = new Map<string, () => void>();
const pongs = kafka.consumer({ groupId: `bench-pong-${run}` });
await pongs.connect();
await pongs.subscribe({ topic: t('pong') });
const joined = new Promise<void>((r) => pongs.on(pongs.events.GROUP_JOIN, () => r()));
await pongs.run({
  eachMessage: async ({ message }) => {
    const k = message.key!.toString();
    pending.get(k)?.();
    pending.delete(k);
  },
});
await joined;
const pinger = kafka.producer();
await pinger.connect();
const ping = async () => {
  const id = randomUUID();
  const done = new Promise<void>((r) => pending.set(id, r));
  await pinger.send({ topic: t('ping'), messages: [{ key: id, value: 'x'.repeat(400) }] });
  await done;
};

// veil: responder + client helper
const dataDir = await mkdtemp(join(tmpdir(), 'veil-bench-unprotect-'));
const configFile = join(dataDir, 'config.yaml');
await writeFile(
  configFile,
  `${readFileSync(join(root, 'config/example.yaml'), 'utf8')}
responders:
  bench:
    requestTopic: ${t('requests')}
    replyTopics: [${t('replies')}]
    deadLetterTopic: ${t('dlq')}
`,
);
const env = { VEIL_MASTER_KEY: '9'.repeat(64), VEIL_BASE_URL: 'http://bench.veil' };
const core = await openEngine({ configFile, dataDir, env, now: () => new Date(), provision: true });
await core.keystore.create('veil-token-signing', 'jwt-es256');
const iat = Math.floor(Date.now() / 1000);
const token = await new JwtSigner(core.keystore, 'veil-token-signing').sign(
  { iss: env.VEIL_BASE_URL, sub: 'bench', aud: 'veil', iat, exp: iat + 3600, roles: ['support'] },
  'at+jwt',
);
const responders = await openResponders({
  configFile,
  dataDir,
  env,
  now: () => new Date(),
  brokers: brokers.split(','),
  development: false,
  logger: pino({ level: 'error' }),
});
await responders.start();
const port = await openKafkaPort('kafkajs', { connection: plainConnection(brokers.split(',')), clientId: 'bench-client' });
const client = await UnprotectClient.connect({ kafka: port, requestTopic: t('requests'), replyTopic: t('replies') });
const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const protectedEmail = core.engine.transform(
  {
    rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'fraud' }] }],
    processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: 'Protect' }] }],
    requests: [
      {
        guid: guid(3),
        rightsContext: guid(1),
        processingContext: guid(2),
        instances: [{ className: 'Customer', propertyName: 'email', value: 'bench@example.com' }],
      },
    ],
  },
  { roles: ['fraud'] },
).responses[0]!.instances[0]!.value;
const body = {
  rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'support' }] }],
  processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: 'Unprotect' }] }],
  requests: [
    { guid: guid(3), rightsContext: guid(1), processingContext: guid(2), instances: [{ className: 'Customer', propertyName: 'email', value: protectedEmail }] },
  ],
};
const unprotect = async () => {
  const reply = await client.request(body, { token });
  if (reply.status !== 200) throw new Error(`status ${reply.status}`);
};
await unprotect();
await ping();

console.log(`veil bench:unprotect — Node ${process.version}, ${seconds}s per row, loopback broker, 2 partitions\n`);
console.log('requesters  bare ping-pong req/s  p50 ms  p99 ms   veil unprotect req/s  p50 ms  p99 ms   veil/bare req/s');
for (const c of [1, 16]) {
  const bare = await load(c, ping);
  const veil = await load(c, unprotect);
  console.log(
    `${String(c).padEnd(12)}${fmt(bare.rps).padEnd(22)}${bare.p50.toFixed(1).padEnd(8)}${bare.p99.toFixed(1).padEnd(9)}${fmt(veil.rps).padEnd(22)}${veil.p50.toFixed(1).padEnd(8)}${veil.p99.toFixed(1).padEnd(9)}${(veil.rps / bare.rps).toFixed(2)}×`,
  );
}
console.log('\ntarget: p99 < 50 ms on loopback with 16 requesters');
await client.close();
await responders.stop();
await port.disconnect();
await Promise.all([echo.disconnect(), pongs.disconnect(), echoProducer.disconnect(), pinger.disconnect()]);
await admin.disconnect();
await rm(dataDir, { recursive: true, force: true });
