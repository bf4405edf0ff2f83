// npm run demo [-- --once] [--port N] [--data-dir D]
// One command, the whole product on this machine: Kafka and the schema registry (scripts/test-env.sh,
// unless KAFKA_BROKERS is set), `veil serve`, `veil stream protect`, `veil stream unprotect` and a
// small producer. Shows raw and clean records side by side, then one unprotect round trip over
// Kafka and one over HTTP. Ctrl-C stops everything it started. The values are invented demo data,
// printed on purpose.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs, promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { kafkaConnection, openKafkaPort } from '../src/kafka/index.ts';
import { UnprotectClient } from '../src/stream/unprotect/index.ts';
import type { TransformRequest } from '../src/engine/index.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const CONFIG = `${ROOT}config/example-pipeline.yaml`;
const TOPICS = ['raw.customers', 'clean.customers', 'dlq.customers', 'unprotect.requests', 'unprotect.replies.support', 'unprotect.refused'];
const PEOPLE = [
  { name: 'Alice Dupont', email: 'alice@example.com', card: '4111-1111-1111-1111' },
  { name: 'Bob Martin', email: 'bob@example.org', card: '5500 0000 0000 0004' },
  { name: 'Chloé Bernard', email: 'chloe@example.net', card: '6011 0009 9013 9424' },
];

const { values: opts } = parseArgs({
  options: { once: { type: 'boolean' }, port: { type: 'string' }, 'stream-port': { type: 'string' }, 'data-dir': { type: 'string' } },
});
const httpPort = Number(opts.port ?? process.env.VEIL_DEMO_PORT ?? 8080);
const streamPort = Number(opts['stream-port'] ?? process.env.VEIL_DEMO_STREAM_PORT ?? 9464);
const dataDir = opts['data-dir'] ?? `${ROOT}.veil-demo`;
const baseUrl = `http://127.0.0.1:${httpPort}`;
const children: { name: string; child: ChildProcess }[] = [];
let stopTestEnv = false;
let stopping: Promise<void> | undefined;

const say = (line = '') => process.stdout.write(`${line}\n`);

async function main(): Promise<boolean> {
  const env = await kafkaEnv();
  say(`demo: Kafka ${env.KAFKA_BROKERS}, registry ${env.SCHEMA_REGISTRY_URL}`);
  await run(`${ROOT}scripts/node22`, [`${ROOT}scripts/create-topics.ts`, ...TOPICS], env);
  const childEnv = { ...process.env, ...env, VEIL_LOG_LEVEL: 'warn', VEIL_BASE_URL: baseUrl };
  const common = ['--config', CONFIG, '--data-dir', dataDir];
  // serve first: it provisions the keys and the development client the others then share
  start('veil serve', ['serve', ...common, '--port', String(httpPort)], childEnv);
  await until(`veil serve on ${baseUrl}`, async () => (await fetch(`${baseUrl}/readyz`)).ok);
  start('veil stream protect', ['stream', 'protect', ...common, '--port', String(streamPort)], childEnv);
  const responder = start('veil stream unprotect', ['stream', 'unprotect', ...common], childEnv);
  await until(`veil stream protect on :${streamPort}`, async () => (await fetch(`http://127.0.0.1:${streamPort}/readyz`)).ok);
  await until('veil stream unprotect', async () => responder.output().includes('serving'));

  const runId = randomUUID();
  const raw = PEOPLE.map((p, i) => ({ id: `${runId}-${i}`, email: p.email, cards: [{ number: p.card }], profile: { name: p.name, tier: 'gold' } }));
  const kafka = new Kafka({ clientId: 'veil-demo', brokers: env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic: 'raw.customers', messages: raw.map((r) => ({ key: r.email, value: JSON.stringify(r) })) });
  await producer.disconnect();
  say(`demo: produced ${raw.length} records to raw.customers`);
  const clean = await readClean(
    kafka,
    raw.map((r) => r.id),
  );

  say('\nraw.customers → clean.customers (email: aes-siv, card: ff1 keeping the first 2 and last 4 digits, name: aes-gcm)');
  for (const r of raw) {
    const c = clean.get(r.id)!;
    say(`  email  ${r.email.padEnd(22)} → ${c.email}`);
    say(`  card   ${r.cards[0]!.number.padEnd(22)} → ${c.cards[0]!.number}`);
    say(`  name   ${r.profile.name.padEnd(22)} → ${c.profile.name.slice(0, 40)}…`);
  }

  const token = await devToken();
  const protectedEmail = clean.get(raw[0]!.id)!.email;
  const body = unprotectBody(protectedEmail);
  const client = await UnprotectClient.connect({
    kafka: await openKafkaPort('kafkajs', { connection: kafkaConnection(env), clientId: 'veil-demo-desk' }),
    requestTopic: 'unprotect.requests',
    replyTopic: 'unprotect.replies.support',
  });
  const overKafka = await client.request(body, { token, timeoutMs: 15_000 }).finally(() => client.close());
  const kafkaValue = overKafka.status === 200 ? overKafka.body.responses[0]?.instances[0]?.value : undefined;
  say(
    `\nunprotect over Kafka (unprotect.requests → unprotect.replies.support, Role support): ${overKafka.status} ${kafkaValue ?? JSON.stringify(overKafka.body)}`,
  );
  const overHttp = await fetch(`${baseUrl}/transform`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const httpBody = (await overHttp.json()) as { responses?: { instances: { value: string }[] }[] };
  const httpValue = httpBody.responses?.[0]?.instances[0]?.value;
  say(`unprotect over HTTP (POST ${baseUrl}/transform, Role support): ${overHttp.status} ${httpValue ?? JSON.stringify(httpBody)}`);
  const ok = kafkaValue === raw[0]!.email && httpValue === raw[0]!.email;
  say(ok ? 'demo: both round trips returned the raw email' : 'demo: a round trip did not return the raw email');
  return ok;
}

function unprotectBody(value: string): TransformRequest {
  const rc = randomUUID();
  const pc = randomUUID();
  return {
    rightsContexts: [{ guid: rc, evidences: [{ name: 'Role', value: 'support' }] }],
    processingContexts: [{ guid: pc, evidences: [{ name: 'Action', value: 'Unprotect' }] }],
    requests: [{ guid: randomUUID(), rightsContext: rc, processingContext: pc, instances: [{ className: 'Customer', propertyName: 'email', value }] }],
  };
}

async function devToken(): Promise<string> {
  const secret = (await readFile(`${dataDir}/dev-client.secret`, 'utf8')).trim();
  const res = await fetch(`${baseUrl}/connect/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }),
  });
  if (!res.ok) throw new Error(`token endpoint answered ${res.status}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

interface CleanRecord {
  id: string;
  email: string;
  cards: { number: string }[];
  profile: { name: string };
}

/** The clean records of this run, by id (the clean topic also holds earlier runs' records). */
async function readClean(kafka: Kafka, ids: string[]): Promise<Map<string, CleanRecord>> {
  const found = new Map<string, CleanRecord>();
  const consumer = kafka.consumer({ groupId: `veil-demo-reader-${randomUUID()}` });
  await consumer.connect();
  await consumer.subscribe({ topic: 'clean.customers', fromBeginning: true });
  const done = new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async ({ message }) => {
        const record = JSON.parse(message.value!.toString('utf8')) as CleanRecord;
        if (ids.includes(record.id)) found.set(record.id, record);
        if (found.size === ids.length) resolve();
      },
    });
  });
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(
      () => reject(new Error(`${ids.length - found.size} of ${ids.length} clean records did not arrive within 60 s (see dlq.customers)`)),
      60_000,
    ).unref(),
  );
  try {
    await Promise.race([done, timeout]);
  } finally {
    await consumer.disconnect();
  }
  return found;
}

async function kafkaEnv(): Promise<Record<string, string>> {
  if (process.env.KAFKA_BROKERS) return { KAFKA_BROKERS: process.env.KAFKA_BROKERS, SCHEMA_REGISTRY_URL: process.env.SCHEMA_REGISTRY_URL ?? '' };
  say('demo: starting Kafka and the schema registry (scripts/test-env.sh; the first run downloads them from Maven Central)');
  const { stdout, stderr } = await promisify(execFile)(`${ROOT}scripts/test-env.sh`, ['start'], { timeout: 600_000 });
  // stopped at the end only if this run started both: the script says which it found running. (A
  // port probe of our own was wrong once under a loaded test run and stopped the tests' broker.)
  stopTestEnv = !/already listening/.test(stderr);
  return Object.fromEntries(
    stdout
      .split('\n')
      .map((l) => /^([A-Z_]+)=(.*)$/.exec(l.trim()))
      .filter((m) => m !== null)
      .map((m) => [m[1]!, m[2]!]),
  );
}

function start(name: string, args: string[], env: NodeJS.ProcessEnv): { output: () => string } {
  const child = spawn(`${ROOT}bin/veil`, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => {
    out += String(d);
    if (out.length > 20_000) out = out.slice(-10_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.once('exit', (code, signal) => {
    if (!stopping) say(`demo: ${name} exited (${signal ?? code}); its last output:\n${out.slice(-2000)}`);
  });
  children.push({ name, child });
  say(`demo: started ${name} (pid ${child.pid})`);
  return { output: () => out };
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (children.some((c) => c.child.exitCode !== null)) throw new Error(`a process exited while waiting for ${what}`);
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`${what} was not ready within ${timeoutMs / 1000} s`);
}

function run(cmd: string, args: string[], env: Record<string, string>): Promise<unknown> {
  return promisify(execFile)(cmd, args, { env: { ...process.env, ...env }, timeout: 120_000 });
}

/** SIGTERM to every process this demo started (each drains and exits), SIGKILL after 40 s. */
function stopAll(): Promise<void> {
  stopping ??= (async () => {
    say('demo: stopping everything it started');
    await Promise.all(
      children.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const kill = setTimeout(() => child.kill('SIGKILL'), 40_000);
            child.once('exit', () => resolve(void clearTimeout(kill)));
            child.kill('SIGTERM');
          }),
      ),
    );
    if (stopTestEnv) await run(`${ROOT}scripts/test-env.sh`, ['stop'], {}).catch(() => undefined);
    say('demo: stopped');
  })();
  return stopping;
}

process.once('SIGINT', () => void stopAll().then(() => process.exit(0)));
process.once('SIGTERM', () => void stopAll().then(() => process.exit(0)));

try {
  const ok = await main();
  if (opts.once) {
    await stopAll();
    process.exit(ok ? 0 : 1);
  }
  say(`\ndemo: running — HTTP API ${baseUrl}, stream metrics http://127.0.0.1:${streamPort}/metrics; Ctrl-C stops everything`);
} catch (e) {
  say(`demo: failed: ${(e as Error).message}`);
  await stopAll();
  process.exit(1);
}
