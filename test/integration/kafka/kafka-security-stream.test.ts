import { rm } from 'node:fs/promises';
import type { Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkaConnection, openKafkaPort, type KafkaPort } from '../../../src/kafka/index.ts';
import { UnprotectClient } from '../../../src/stream/unprotect/index.ts';
import { createTopics, expectKeyOrder, javaConsumeCommitted } from '../../helpers/kafka.ts';
import { eventually } from '../../helpers/processes.ts';
import { startSecureBroker, type Listener, type SecureBroker } from '../../helpers/secure-kafka.ts';
import { BASE_URL, Children, harness, seedDataDir, type VeilChild } from '../../helpers/secure-veil.ts';
import { streamClients } from '../../helpers/stream-clients.ts';

const PER_PIPELINE = 300;
const ROUNDS = 6;
const LISTENERS: Listener[] = ['scram', 'mtls', 'oauth'];

interface Lane {
  listener: Listener;
  client: string;
  name: string;
  raw: string;
  clean: string;
  dlq: string;
  group: string;
  dataDir: string;
  process?: VeilChild;
}

/**
 * veil's stream processors on a broker that authenticates and authorizes every connection
 * (helpers/secure-kafka.ts): SASL_SSL with SCRAM-SHA-512, mutual TLS and SASL_SSL with
 * OAUTHBEARER, each on both Kafka clients, each process holding only the ACLs
 * docs/kafka-security.md lists for it. Exactly-once is verified as everywhere else: by record
 * id, with Kafka's Java read_committed client (on the harness's listener).
 */
describe('veil stream on a secured Kafka (SASL_SSL SCRAM-SHA-512, mTLS, OAUTHBEARER; documented ACLs only)', () => {
  let broker: SecureBroker;
  let kafka: Kafka;
  let seed: Awaited<ReturnType<typeof seedDataDir>>;
  const children = new Children();
  const lanes: Lane[] = LISTENERS.flatMap((listener) =>
    streamClients().map((client) => {
      const name = `sec-${listener}-${client}`;
      return { listener, client, name, raw: `raw.${name}`, clean: `clean.${name}`, dlq: `dlq.${name}`, group: `veil-protect-${name}`, dataDir: '' };
    }),
  );
  const desk = (listener: Listener) => ({
    requests: `requests.${listener}`,
    replies: `replies.${listener}`,
    dlq: `dlq.desk.${listener}`,
    group: `veil-unprotect-desk-${listener}`,
  });

  beforeAll(async () => {
    broker = await startSecureBroker('stream');
    kafka = harness(broker);
    await createTopics(
      kafka,
      lanes.flatMap((l) => [l.raw, l.clean]),
      3,
    );
    await createTopics(
      kafka,
      [...lanes.map((l) => l.dlq), ...LISTENERS.flatMap((l) => Object.values(desk(l)).slice(0, 3)), ...LISTENERS.map((l) => `rewrapped.${l}`)],
      1,
    );
    const pipelines = lanes
      .map(
        (l) => `  ${l.name}:
    source: { topics: [${l.raw}] }
    sink: { topic: ${l.clean} }
    deadLetterTopic: ${l.dlq}
    format: json
    fields: [ { path: email, field: Customer.email }, { path: name, field: Customer.name } ]
    key: { field: Customer.email }
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }`,
      )
      .join('\n');
    const responders = LISTENERS.map(
      (l) => `  desk-${l}:
    requestTopic: ${desk(l).requests}
    replyTopics: [${desk(l).replies}]
    deadLetterTopic: ${desk(l).dlq}
    groupId: ${desk(l).group}`,
    ).join('\n');
    seed = await seedDataDir(`pipelines:\n${pipelines}\nresponders:\n${responders}\n`);
    for (const l of lanes) {
      await broker.grant('protect', { RAW_TOPIC: l.raw, CLEAN_TOPIC: l.clean, DEAD_LETTER_TOPIC: l.dlq, GROUP: l.group });
      l.dataDir = await seed.copy();
    }
  }, 300_000);

  afterAll(async () => {
    await children.killAll();
    await broker?.stop();
    for (const l of lanes) if (l.dataDir) await rm(l.dataDir, { recursive: true, force: true });
  }, 120_000);

  const start = (l: Lane) => {
    l.process = children.spawn(
      ['stream', 'protect', '--config', seed.configFile, '--data-dir', l.dataDir, '--pipeline', l.name, '--port', '0'],
      broker.env(l.listener, { VEIL_STREAM_CLIENT: l.client, VEIL_KAFKA_SESSION_TIMEOUT_MS: '6000' }),
    );
    return l.process;
  };

  it('protects exactly once through a SIGKILL of every processor and a broker restart, on each listener and both clients', async () => {
    const seen = new Map<string, Set<number>>(lanes.map((l) => [l.clean, new Set()]));
    const verifier = kafka.consumer({ groupId: 'secure-verifier', readUncommitted: false });
    await verifier.connect();
    for (const l of lanes) await verifier.subscribe({ topic: l.clean, fromBeginning: true });
    await verifier.run({ eachMessage: async ({ topic, message }) => void seen.get(topic)!.add((JSON.parse(message.value!.toString()) as { id: number }).id) });
    const progressed = (n: number) => lanes.every((l) => seen.get(l.clean)!.size >= n);
    for (const l of lanes) start(l);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 100, initialRetryTime: 300, maxRetryTime: 2000 } });
    await producer.connect();
    const round = async (r: number) => {
      const per = PER_PIPELINE / ROUNDS;
      for (const l of lanes) {
        await producer.send({
          topic: l.raw,
          acks: -1,
          messages: Array.from({ length: per }, (_, i) => {
            const id = r * per + i;
            const email = `user${id % 23}@example.com`;
            return { key: email, value: JSON.stringify({ id, email, name: `Name ${id}`, seq: id }) };
          }),
        });
      }
    };
    try {
      await round(0);
      await round(1);
      await eventually('every lane protecting', async () => (progressed(20) ? true : undefined), 120_000);
      for (const l of lanes) l.process!.kill('SIGKILL');
      await round(2);
      for (const l of lanes) start(l);
      await eventually('progress after the SIGKILLs', async () => (progressed(PER_PIPELINE / 2) ? true : undefined), 120_000);
      await broker.restart();
      await round(3);
      await round(4);
      await round(5);
      await eventually('every record of every lane', async () => (progressed(PER_PIPELINE) ? true : undefined), 180_000);
    } finally {
      await producer.disconnect();
      await verifier.disconnect();
    }
    for (const l of lanes) {
      const records = await javaConsumeCommitted(l.clean, broker.internal);
      const ids = records.map((r) => (JSON.parse(r.value) as { id: number }).id);
      expect(ids.length, `${l.name}: duplicates`).toBe(new Set(ids).size);
      expect(new Set(ids).size, `${l.name}: lost records`).toBe(PER_PIPELINE);
      const first = JSON.parse(records[0]!.value) as { email: string; name: string };
      expect(first.email).not.toMatch(/@example\.com/);
      expect(first.name).not.toMatch(/^Name /);
      // per key (its protected email, deterministic): one partition, ids in order
      expect(expectKeyOrder(records.map((r) => ({ partition: r.partition, record: JSON.parse(r.value) as { email: string; id: number } })))).toBe(23);
    }
  }, 600_000);

  it.each(LISTENERS)(
    'answers unprotect requests over %s (the responder and the client each with their ACLs)',
    async (listener) => {
      const d = desk(listener);
      await broker.grant('unprotect', { REQUEST_TOPIC: d.requests, REPLY_TOPIC: d.replies, DEAD_LETTER_TOPIC: d.dlq, GROUP: d.group });
      await broker.grant('unprotect-client', { REQUEST_TOPIC: d.requests, REPLY_TOPIC: d.replies });
      const lane = lanes.find((l) => l.listener === listener && l.client === 'librdkafka') ?? lanes.find((l) => l.listener === listener)!;
      children.spawn(
        ['stream', 'unprotect', '--config', seed.configFile, '--data-dir', await seed.copy(), '--responder', `desk-${listener}`, '--port', '0'],
        broker.env(listener, { VEIL_BASE_URL: BASE_URL }),
      );
      const protectedRecord = JSON.parse((await javaConsumeCommitted(lane.clean, broker.internal))[0]!.value) as { id: number; email: string };
      let port: KafkaPort | undefined;
      let client: UnprotectClient | undefined;
      try {
        port = await openKafkaPort('kafkajs', { connection: kafkaConnection(broker.env(listener)), clientId: `secure-desk-${listener}` });
        client = await UnprotectClient.connect({ kafka: port, requestTopic: d.requests, replyTopic: d.replies });
        const body = unprotectBody(protectedRecord.email);
        const token = await seed.token(['support']);
        const reply = await eventually(
          'a reply',
          async () => {
            const r = await client!.request(body, { token, timeoutMs: 5000 });
            return r.status === 200 ? r : undefined;
          },
          90_000,
        );
        expect((reply.body as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances[0]!.value).toMatch(/^user\d+@example\.com$/);
      } finally {
        await client?.close();
        await port?.disconnect();
      }
    },
    180_000,
  );

  it.each(['scram', 'mtls'] as const)(
    'rewraps a clean topic into a new one over %s, exactly once',
    async (listener) => {
      const lane = lanes.find((l) => l.listener === listener)!;
      const to = `rewrapped.${listener}`;
      const group = `veil-rewrap-${lane.name}`;
      await broker.grant('rewrap', { CLEAN_TOPIC: lane.clean, NEW_TOPIC: to, DEAD_LETTER_TOPIC: lane.dlq, GROUP: group });
      const rewrap = children.spawn(
        ['stream', 'rewrap', '--config', seed.configFile, '--data-dir', lane.dataDir, '--pipeline', lane.name, '--to', to, '--role', 'fraud', '--port', '0'],
        broker.env(listener, { VEIL_STREAM_CLIENT: lane.client }),
      );
      try {
        const records = await eventually(
          'the rewrapped topic complete',
          async () => {
            const r = await javaConsumeCommitted(to, broker.internal);
            return r.length >= PER_PIPELINE ? r : undefined;
          },
          180_000,
        );
        const ids = records.map((r) => (JSON.parse(r.value) as { id: number }).id);
        expect([ids.length, new Set(ids).size]).toEqual([PER_PIPELINE, PER_PIPELINE]);
      } finally {
        rewrap.kill('SIGTERM');
      }
    },
    240_000,
  );

  it('no process printed a password, a client secret, a token or a key password', () => {
    children.expectNoSecret([broker.password, broker.oauthSecret, broker.pki.brokerKeyPassword]);
  });
});

function unprotectBody(value: string) {
  const g = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
  return {
    rightsContexts: [{ guid: g(1), evidences: [{ name: 'Role', value: 'support' }] }],
    processingContexts: [{ guid: g(2), evidences: [{ name: 'Action', value: 'Unprotect' }] }],
    requests: [{ guid: g(3), rightsContext: g(1), processingContext: g(2), instances: [{ className: 'Customer', propertyName: 'email', value }] }],
  };
}
