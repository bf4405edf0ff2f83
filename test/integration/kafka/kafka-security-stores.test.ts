import { rm } from 'node:fs/promises';
import type { Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTopics } from '../../helpers/kafka.ts';
import { eventually } from '../../helpers/processes.ts';
import { PRINCIPAL, startSecureBroker, type Listener, type SecureBroker } from '../../helpers/secure-kafka.ts';
import { Children, exited, harness, seedDataDir } from '../../helpers/secure-veil.ts';
import { streamClients } from '../../helpers/stream-clients.ts';
import { startVeilServe, type VeilProcess } from '../../helpers/veil-process.ts';
import { personConfig, subjectCall } from '../../helpers/subject-config.ts';
import { clientsYaml } from '../../http/support.ts';

/** The exit code and the line of a process Kafka refused (docs/kafka-security.md). */
const DENIED_EXIT = 77;

/**
 * The control store, the subject-key topic and `veil discover` on a broker that authenticates
 * and authorizes every connection, under only the documented ACLs; and what a process does when
 * Kafka refuses it — a wrong password, an untrusted or refused certificate, a missing ACL, an
 * OAuth client the token endpoint refuses: the documented line and exit within 60 s, no secret in
 * any output.
 */
describe('veil on a secured Kafka: the shared stores, discover, and refusals', () => {
  let broker: SecureBroker;
  let kafka: Kafka;
  const children = new Children();
  const serves: VeilProcess[] = [];
  const topics = { raw: 'raw.secure', clean: 'clean.secure', dlq: 'dlq.secure' };

  beforeAll(async () => {
    broker = await startSecureBroker('stores');
    kafka = harness(broker);
    await createTopics(kafka, [topics.raw, topics.clean, topics.dlq], 1);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: topics.raw,
      messages: Array.from({ length: 40 }, (_, i) => ({
        key: `k${i}`,
        value: JSON.stringify({ id: i, customer: { email: `person${i}@example.com` }, total: i * 3 }),
      })),
    });
    await producer.disconnect();
  }, 300_000);

  afterAll(async () => {
    for (const s of serves) await s.stop();
    await children.killAll();
    await broker?.stop();
  }, 120_000);

  it.each(['scram', 'mtls'] as const)(
    'over %s: two serve processes share the control store and the subject keys (a value protected on one unprotects on the other)',
    async (listener: Listener) => {
      const control = `veil.control.${listener}`;
      const subjects = `veil.subjects.${listener}`;
      await broker.grant('control-store', { CONTROL_TOPIC: control });
      await broker.grant('subject-store', { SUBJECT_TOPIC: subjects });
      const configText = personConfig({ extra: await clientsYaml({ desk: { secret: 'desk-secret-0123456789abcdef', roles: ['desk'] } }) });
      const env = broker.env(listener, {
        VEIL_CONTROL_STORE: 'kafka',
        VEIL_CONTROL_TOPIC: control,
        VEIL_SUBJECT_TOPIC: subjects,
        VEIL_SUBJECT_PARTITIONS: '2',
      });
      const first = await startVeilServe({ configText, env });
      serves.push(first);
      const second = await startVeilServe({ configText, env });
      serves.push(second);
      const call = async (veil: VeilProcess, action: string, values: [string, string][]) => {
        const token = JSON.parse(
          (
            await veil.request('/connect/token', {
              method: 'POST',
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              body: 'grant_type=client_credentials&client_id=desk&client_secret=desk-secret-0123456789abcdef',
            })
          ).text,
        ).access_token as string;
        const res = await veil.request('/transform', {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(subjectCall(action, [{ subject: 'subject-42', values }])),
        });
        expect(res.status, res.text).toBe(200);
        return (JSON.parse(res.text) as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances.map((i) => i.value);
      };
      const [email, name] = await call(first, 'Protect', [
        ['email', 'ada@example.com'],
        ['name', 'Ada Lovelace'],
      ]);
      expect(email).not.toContain('ada@');
      // the second process knows the subject's key from the topic
      expect(
        await eventually(
          'the subject key on the other process',
          async () => {
            const values = await call(second, 'Unprotect', [
              ['email', email!],
              ['name', name!],
            ]).catch(() => undefined);
            return values?.[0] === 'ada@example.com' ? values : undefined;
          },
          30_000,
        ),
      ).toEqual(['ada@example.com', 'Ada Lovelace']);
      for (const veil of [first, second]) expect((await veil.request('/healthz')).status).toBe(200);
    },
    180_000,
  );

  it.each(['scram', 'mtls'] as const)(
    'veil discover --topic reads a topic over %s with the discover ACLs',
    async (listener) => {
      await broker.grant('discover', { TOPIC: topics.raw });
      const discover = children.spawn(['discover', '--topic', topics.raw, '--sample', '40'], broker.env(listener));
      expect(await exited(discover, 60_000)).toBe(0);
      expect(discover.output()).toMatch(/sampled 40 record\(s\)/);
      expect(discover.output()).toMatch(/customer\.email\s+email/);
    },
    90_000,
  );

  const refusals: { name: string; listener: Listener; env: () => Record<string, string>; code: RegExp }[] = [
    {
      name: 'a wrong SCRAM password',
      listener: 'scram',
      env: () => ({ VEIL_KAFKA_SASL_PASSWORD_FILE: '', VEIL_KAFKA_SASL_PASSWORD: `${broker.password}-wrong` }),
      code: /AUTHENTICATION_FAILED/,
    },
    {
      name: 'a broker certificate no trusted CA signed',
      listener: 'scram',
      env: () => ({ VEIL_KAFKA_SSL_CA_LOCATION: broker.pki.otherCa }),
      code: /TLS_CERTIFICATE_REFUSED/,
    },
    {
      name: 'a client certificate the broker does not trust',
      listener: 'mtls',
      env: () => ({ VEIL_KAFKA_SSL_CERTIFICATE_LOCATION: broker.pki.untrusted.cert, VEIL_KAFKA_SSL_KEY_LOCATION: broker.pki.untrusted.key }),
      code: /TLS_CERTIFICATE_REFUSED/,
    },
    {
      name: 'an OAuth client secret the token endpoint refuses',
      listener: 'oauth',
      env: () => ({ VEIL_KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET_FILE: '', VEIL_KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: `${broker.oauthSecret}-wrong` }),
      code: /AUTHENTICATION_FAILED/,
    },
    { name: 'a principal without the documented ACLs', listener: 'scram', env: () => ({ VEIL_KAFKA_SASL_USERNAME: 'stranger' }), code: /AUTHORIZATION_FAILED/ },
  ];

  describe.each(streamClients())('refusals on %s', (client) => {
    let configFile = '';
    let dataDir = '';
    beforeAll(async () => {
      await broker.grant('protect', {
        RAW_TOPIC: topics.raw,
        CLEAN_TOPIC: topics.clean,
        DEAD_LETTER_TOPIC: topics.dlq,
        GROUP: `veil-protect-refused-${client}`,
      });
      const seed = await seedDataDir(`pipelines:
  refused-${client}:
    source: { topics: [${topics.raw}] }
    sink: { topic: ${topics.clean} }
    deadLetterTopic: ${topics.dlq}
    format: json
    fields: [ { path: customer.email, field: Customer.email } ]
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
`);
      ({ configFile } = seed);
      dataDir = await seed.copy();
    }, 60_000);
    afterAll(async () => {
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    });

    it.each(refusals)(
      '$name: one KAFKA_ACCESS_DENIED line and exit 77 within 60 s',
      async ({ listener, env, code }) => {
        const overrides = Object.fromEntries(Object.entries(env()).filter(([, v]) => v !== ''));
        const base = broker.env(listener, { VEIL_STREAM_CLIENT: client });
        for (const [k, v] of Object.entries(env())) if (v === '') delete base[k];
        const started = Date.now();
        const child = children.spawn(['stream', 'protect', '--config', configFile, '--data-dir', dataDir, '--port', '0'], { ...base, ...overrides });
        expect(await exited(child, 60_000), child.output()).toBe(DENIED_EXIT);
        const line = child
          .output()
          .split('\n')
          .find((l) => l.includes('"KAFKA_ACCESS_DENIED"'));
        expect(line, child.output()).toBeDefined();
        expect(JSON.parse(line!)).toMatchObject({ code: 'KAFKA_ACCESS_DENIED', kafkaCode: expect.stringMatching(code) });
        expect(Date.now() - started).toBeLessThan(60_000);
      },
      90_000,
    );
  });

  it('an expired client certificate is refused at start, naming the property (CONFIG_INVALID, exit 1)', async () => {
    const child = children.spawn(
      ['discover', '--topic', topics.raw],
      broker.env('mtls', { VEIL_KAFKA_SSL_CERTIFICATE_LOCATION: broker.pki.expired.cert, VEIL_KAFKA_SSL_KEY_LOCATION: broker.pki.expired.key }),
    );
    expect(await exited(child, 30_000)).toBe(1);
    expect(child.output()).toMatch(/ssl\.certificate\.location \(VEIL_KAFKA_SSL_CERTIFICATE_LOCATION\): the certificate in .* expired on .*\[CONFIG_INVALID\]/);
  });

  it('no process printed a password, a client secret, a token or a key password; no /metrics or /healthz holds one', async () => {
    const pages = (await Promise.all(serves.flatMap((s) => ['/metrics', '/healthz', '/readyz'].map((path) => s.request(path))))).map((a) => a.text);
    expect(pages.some((p) => p.includes('process_cpu_seconds_total'))).toBe(true);
    for (const secret of [broker.password, broker.oauthSecret]) expect(pages.some((p) => p.includes(secret))).toBe(false);
    for (const s of serves) children.all.push(Object.assign(s.child, { output: () => s.output() }) as never);
    children.expectNoSecret([broker.password, broker.oauthSecret, broker.pki.brokerKeyPassword, `${broker.password}-wrong`, `${broker.oauthSecret}-wrong`]);
    expect(PRINCIPAL).toBe('veil');
  });
});
