import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROKERS, createTopics, javaConsumeCommitted, kafkaClient, produce, topicsFor } from '../helpers/kafka.ts';
import { startMoto, type Moto } from '../helpers/moto.ts';
import { eventually, freePorts, ROOT } from '../helpers/processes.ts';

const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/**
 * The three kinds of veil process on one machine as if on three hosts — a `serve`, a `gateway`
 * and a `stream protect`, each with a data dir of its own — sharing only the Kafka control store
 * and an AWS KMS key (moto_server). One key set in all three; with the KMS stopped, each keeps its
 * keys for their lifetime, then refuses and turns its health red; all recover when it is back.
 */
describe('serve, gateway and stream protect sharing the control store and a KMS', () => {
  const t = topicsFor('three');
  const kafka = kafkaClient('three');
  let moto: Moto;
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  const ports = { upstream: 0, serve: 0, gateway: 0, stream: 0 };
  let env: Record<string, string>;
  let configFile: string;

  const start = (args: string[], dataDir: string, extra: Record<string, string> = {}) => {
    const child = spawn(join(ROOT, 'bin/veil'), [...args, '--config', configFile, '--data-dir', dataDir], { env: { ...process.env, VEIL_LOG_LEVEL: 'warn', VEIL_DRAIN_DELAY_MS: '0', ...env, ...extra }, stdio: ['ignore', 'ignore', 'ignore'] });
    children.push(child);
    return child;
  };
  const token = async (client: string, secret: string) => ((await (await fetch(`http://127.0.0.1:${ports.serve}/connect/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client, client_secret: secret }) })).json()) as { access_token: string }).access_token;
  const tokens = new Map<string, string>();
  const transform = async (action: string, value: string) => {
    const body = {
      rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'fraud' }] }],
      processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: action }] }],
      requests: [{ guid: guid(3), rightsContext: guid(1), processingContext: guid(2), instances: [{ className: 'Customer', propertyName: 'email', value }] }],
    };
    // a token taken while the keys are usable (signing one is refused with the other keys)
    if (!tokens.has('fraud')) tokens.set('fraud', await token('example-fraud', 'fraud-example-secret'));
    const res = await fetch(`http://127.0.0.1:${ports.serve}/transform`, { method: 'POST', headers: { authorization: `Bearer ${tokens.get('fraud')}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, value: ((await res.json()) as { responses?: { instances: { value: string }[] }[] }).responses?.[0]?.instances[0]?.value };
  };
  const health = async () => Promise.all([`http://127.0.0.1:${ports.serve}/healthz`, `http://127.0.0.1:${ports.gateway}/_veil/healthz`, `http://127.0.0.1:${ports.stream}/healthz`].map((u) => fetch(u).then((r) => r.status, () => 0)));

  beforeAll(async () => {
    moto = await startMoto();
    const admin = new KMSClient({ region: 'eu-west-1', endpoint: moto.endpoint, credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' } });
    const keyId = (await admin.send(new CreateKeyCommand({}))).KeyMetadata!.KeyId!;
    admin.destroy();
    const first = await freePorts(4);
    Object.assign(ports, { upstream: first, serve: first + 1, gateway: first + 2, stream: first + 3 });
    for (let i = 0; i < 4; i++) dirs.push(await mkdtemp(join(tmpdir(), `veil-three-${i}-`)));
    configFile = join(dirs[3]!, 'config.yaml');
    const gateway = (await readFile(join(ROOT, 'examples/gateway/gateway.yaml'), 'utf8')).replace('upstream: http://127.0.0.1:3000', `upstream: http://127.0.0.1:${ports.upstream}`);
    await writeFile(configFile, `${gateway}
pipelines:
  customers:
    source: { topics: [${t.raw}] }
    sink: { topic: ${t.clean} }
    deadLetterTopic: ${t.dlq}
    format: json
    groupId: veil-test-${t.id}
    fields: [ { path: email, field: Customer.email } ]
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
`);
    await createTopics(kafka, [t.raw, t.clean, t.dlq], 2);
    env = {
      VEIL_CONTROL_STORE: 'kafka', VEIL_CONTROL_TOPIC: `veil.control.three.${randomBytes(4).toString('hex')}`, KAFKA_BROKERS: BROKERS.join(','),
      VEIL_KMS: 'aws-kms', VEIL_KMS_KEY_ID: keyId, VEIL_KMS_REGION: 'eu-west-1', VEIL_KMS_ENDPOINT: moto.endpoint, AWS_ACCESS_KEY_ID: 'testing', AWS_SECRET_ACCESS_KEY: 'testing',
      VEIL_KMS_TTL_SECONDS: '4', VEIL_BASE_URL: `http://127.0.0.1:${ports.serve}`,
    };
    const app = spawn(join(ROOT, 'scripts/node22'), [join(ROOT, 'examples/gateway/upstream.ts'), String(ports.upstream)], { stdio: 'ignore' });
    children.push(app);
    // the first process makes the keys; the others find them in the store
    start(['serve', '--port', String(ports.serve)], dirs[0]!);
    await eventually('serve', async () => ((await fetch(`http://127.0.0.1:${ports.serve}/readyz`)).ok ? true : undefined), 60_000);
    start(['gateway', '--port', String(ports.gateway)], dirs[1]!);
    start(['stream', 'protect', '--port', String(ports.stream)], dirs[2]!);
    await eventually('all healthy', async () => ((await health()).every((s) => s === 200) ? true : undefined), 60_000);
  }, 240_000);
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    moto?.resume();
    await moto?.stop();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('one key set: what the gateway and the stream protect, serve unprotects; equal emails protect equally in all three', async () => {
    const ingest = await token('example-ingest', 'ingest-example-secret');
    const posted = await fetch(`http://127.0.0.1:${ports.gateway}/customers`, { method: 'POST', headers: { authorization: `Bearer ${ingest}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Ada', email: 'ada@example.com', card: { number: '4111-1111-1111-1111' }, contacts: [], plan: 'gold' }) });
    expect(posted.status).toBe(201);
    const stored = await (await fetch(`http://127.0.0.1:${ports.upstream}/customers/1`)).json() as { email: string };
    expect(stored.email).not.toBe('ada@example.com');
    expect(await transform('Unprotect', stored.email)).toMatchObject({ status: 200, value: 'ada@example.com' });
    await produce(kafka, t.raw, [{ key: 'k', value: JSON.stringify({ id: 1, email: 'ada@example.com' }) }]);
    const clean = await eventually('the clean record', async () => (await javaConsumeCommitted(t.clean))[0]);
    expect((JSON.parse(clean.value) as { email: string }).email).toBe(stored.email);
    expect((await transform('Protect', 'ada@example.com')).value).toBe(stored.email);
  }, 60_000);

  it('the KMS stopped: keys serve for their lifetime, then every process refuses and turns red; all recover when it is back', async () => {
    const ingest = await token('example-ingest', 'ingest-example-secret');
    const post = () => fetch(`http://127.0.0.1:${ports.gateway}/customers`, { method: 'POST', headers: { authorization: `Bearer ${ingest}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Bob', email: 'bob@example.com', contacts: [] }) }).then((r) => r.status);
    await transform('Protect', 'warm@example.com');
    moto.pause();
    try {
      const paused = Date.now();
      await eventually('all red', async () => ((await health()).every((s) => s === 503) ? true : undefined), 30_000);
      expect(Date.now() - paused).toBeGreaterThanOrEqual(2_500);
      await new Promise((r) => setTimeout(r, 4_000)); // every protection thread's own lease lapses too
      expect((await transform('Protect', 'ada@example.com')).status).toBe(503);
      expect(await post()).toBe(503);
      expect((await (await fetch(`http://127.0.0.1:${ports.upstream}/customers`)).json() as unknown[]).length).toBe(1);
      await produce(kafka, t.raw, [{ key: 'k', value: JSON.stringify({ id: 2, email: 'bob@example.com' }) }]);
      await new Promise((r) => setTimeout(r, 3_000));
      expect(await javaConsumeCommitted(t.clean)).toHaveLength(1);
    } finally {
      moto.resume();
    }
    await eventually('all green', async () => ((await health()).every((s) => s === 200) ? true : undefined), 60_000);
    expect((await transform('Protect', 'ada@example.com')).status).toBe(200);
    expect(await post()).toBe(201);
    const clean = await eventually('the record held back', async () => {
      const got = await javaConsumeCommitted(t.clean);
      return got.length >= 2 ? got : undefined;
    }, 60_000);
    expect(clean.map((r) => (JSON.parse(r.value) as { id: number }).id).sort()).toEqual([1, 2]);
  }, 180_000);
});
