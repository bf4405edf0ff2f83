import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlKafkaConnection, kafkaConnection, subjectKafkaConnection, type KafkaConnection } from '../../src/kafka/index.ts';
import { kafkajsSecurity } from '../../src/kafka/kafkajs-security.ts';
import { librdkafkaSecurity } from '../../src/kafka/librdkafka-security.ts';
import { makeTestPki, type TestPki } from '../helpers/tls-certs.ts';

let dir: string;
let pki: TestPki;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'veil-client-settings-'));
  pki = await makeTestPki(join(dir, 'pki'), ['veil']);
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const file = async (name: string, text: string) => {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
};

/** The refusal's message and the property its pointer names. */
function refusal(run: () => unknown): { message: string; pointer: string } {
  try {
    run();
  } catch (e) {
    const err = e as { code?: string; message: string; details?: { pointer: string }[] };
    expect(err.code).toBe('CONFIG_INVALID');
    return { message: err.message, pointer: err.details?.[0]?.pointer ?? '' };
  }
  throw new Error('not refused');
}

describe('client settings: one connection per cluster from VEIL_KAFKA_CONFIG_FILE and VEIL_KAFKA_* (librdkafka names)', () => {
  it('plaintext by default, brokers from --brokers, KAFKA_BROKERS, bootstrap.servers or the default', async () => {
    expect(kafkaConnection({}, { defaultBrokers: ['127.0.0.1:9092'] })).toEqual({ scope: 'VEIL_KAFKA_', brokers: ['127.0.0.1:9092'], protocol: 'PLAINTEXT' });
    expect(kafkaConnection({ KAFKA_BROKERS: 'a:1, b:2' }).brokers).toEqual(['a:1', 'b:2']);
    expect(kafkaConnection({ KAFKA_BROKERS: 'a:1' }, { brokers: ['c:3'] }).brokers).toEqual(['c:3']);
    const props = await file('bootstrap.properties', 'bootstrap.servers=pkc-1.confluent.cloud:9092\n');
    expect(kafkaConnection({ VEIL_KAFKA_CONFIG_FILE: props }).brokers).toEqual(['pkc-1.confluent.cloud:9092']);
    expect(refusal(() => kafkaConnection({ VEIL_KAFKA_CONFIG_FILE: props, KAFKA_BROKERS: 'other:9092' }))).toMatchObject({ pointer: '/bootstrap.servers' });
    expect(refusal(() => kafkaConnection({})).message).toMatch(/no Kafka brokers/);
  });

  it("reads Confluent Cloud's client.properties: SASL_SSL PLAIN from sasl.jaas.config, the registry's lines accepted", async () => {
    const props = await file(
      'ccloud.properties',
      `# Required connection configs for Kafka producer, consumer, and admin
bootstrap.servers=pkc-abcde.us-east-1.aws.confluent.cloud:9092
security.protocol=SASL_SSL
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username='KEY123' password='s3cr=t;"x';
sasl.mechanism=PLAIN
client.dns.lookup=use_all_dns_ips
session.timeout.ms=45000
acks=all
schema.registry.url=https://psrc-1.confluent.cloud
basic.auth.credentials.source=USER_INFO
basic.auth.user.info=SRKEY:SRSECRET
`,
    );
    const c = kafkaConnection({ VEIL_KAFKA_CONFIG_FILE: props });
    expect(c).toMatchObject({
      protocol: 'SASL_SSL',
      brokers: ['pkc-abcde.us-east-1.aws.confluent.cloud:9092'],
      sessionTimeoutMs: 45000,
      tls: { verifyHostname: true },
    });
    expect(c.sasl).toMatchObject({ mechanism: 'PLAIN', username: 'KEY123' });
    expect(c.sasl?.mechanism === 'PLAIN' && c.sasl.password.reveal()).toBe('s3cr=t;"x');
    // printed any way, the connection shows no secret
    for (const shown of [JSON.stringify(c), inspect(c, { depth: 9 }), String((c.sasl as { password: unknown }).password)]) expect(shown).not.toContain('s3cr');
  });

  it('environment overrides the file; a _FILE variable reads a mounted secret; both forms at once are refused', async () => {
    const props = await file('scram.properties', 'security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=app\nsasl.password=from-file\n');
    const secret = await file('password', 'from-secret\n');
    const c = kafkaConnection({
      KAFKA_BROKERS: 'b:9093',
      VEIL_KAFKA_CONFIG_FILE: props,
      VEIL_KAFKA_SASL_PASSWORD_FILE: secret,
      VEIL_KAFKA_SASL_USERNAME: 'veil',
    });
    expect(c.sasl).toMatchObject({ mechanism: 'SCRAM-SHA-512', username: 'veil' });
    expect(c.sasl?.mechanism !== 'OAUTHBEARER' && c.sasl?.password.reveal()).toBe('from-secret');
    expect(
      refusal(() =>
        kafkaConnection({ KAFKA_BROKERS: 'b:9093', VEIL_KAFKA_CONFIG_FILE: props, VEIL_KAFKA_SASL_PASSWORD: 'x', VEIL_KAFKA_SASL_PASSWORD_FILE: secret }),
      ).message,
    ).toMatch(/VEIL_KAFKA_SASL_PASSWORD and VEIL_KAFKA_SASL_PASSWORD_FILE are both set/);
    expect(refusal(() => kafkaConnection({ KAFKA_BROKERS: 'b', VEIL_KAFKA_SASL_PASSWORD_FILE: join(dir, 'absent') })).message).toMatch(
      /cannot read .*absent \(ENOENT\)/,
    );
  });

  it.each([
    ['an unknown variable', { VEIL_KAFKA_SASL_PASSWRD: 'x' }, '/VEIL_KAFKA_SASL_PASSWRD', /no such setting/],
    ['an unknown protocol', { VEIL_KAFKA_SECURITY_PROTOCOL: 'TLS' }, '/security.protocol', /must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL/],
    ['SASL settings on PLAINTEXT', { VEIL_KAFKA_SASL_USERNAME: 'u' }, '/sasl.username', /security.protocol is PLAINTEXT, which uses no SASL/],
    [
      'TLS settings on SASL_PLAINTEXT',
      {
        VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT',
        VEIL_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256',
        VEIL_KAFKA_SASL_USERNAME: 'u',
        VEIL_KAFKA_SASL_PASSWORD: 'p',
        VEIL_KAFKA_SSL_CA_LOCATION: '/x',
      },
      '/ssl.ca.location',
      /uses no TLS/,
    ],
    ['a SASL protocol without a mechanism', { VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL' }, '/sasl.mechanism', /needs sasl.mechanism/],
    ['Kerberos', { VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', VEIL_KAFKA_SASL_MECHANISM: 'GSSAPI' }, '/sasl.mechanism', /Kerberos is not supported/],
    [
      'PLAIN without a password',
      { VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', VEIL_KAFKA_SASL_MECHANISM: 'PLAIN', VEIL_KAFKA_SASL_USERNAME: 'u' },
      '/sasl.password',
      /needs sasl.username and sasl.password/,
    ],
    [
      'PLAIN over SASL_PLAINTEXT',
      { VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT', VEIL_KAFKA_SASL_MECHANISM: 'PLAIN', VEIL_KAFKA_SASL_USERNAME: 'u', VEIL_KAFKA_SASL_PASSWORD: 'p' },
      '/security.protocol',
      /would send the password unencrypted/,
    ],
    [
      'sasl.mechanism and sasl.mechanisms apart',
      { VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', VEIL_KAFKA_SASL_MECHANISM: 'PLAIN', VEIL_KAFKA_SASL_MECHANISMS: 'SCRAM-SHA-256' },
      '/sasl.mechanism',
      /differ/,
    ],
    [
      'a JAAS module of another mechanism',
      {
        VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
        VEIL_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
        VEIL_KAFKA_SASL_JAAS_CONFIG: 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";',
      },
      '/sasl.jaas.config',
      /PLAIN login module but sasl.mechanism is SCRAM-SHA-512/,
    ],
    [
      'a JAAS user apart from sasl.username',
      {
        VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
        VEIL_KAFKA_SASL_MECHANISM: 'PLAIN',
        VEIL_KAFKA_SASL_USERNAME: 'a',
        VEIL_KAFKA_SASL_JAAS_CONFIG: 'org.apache.kafka.common.security.plain.PlainLoginModule required username="b" password="p";',
      },
      '/sasl.username',
      /differ: give one/,
    ],
    [
      'a JAAS line that does not parse',
      {
        VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
        VEIL_KAFKA_SASL_MECHANISM: 'PLAIN',
        VEIL_KAFKA_SASL_JAAS_CONFIG: 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p"',
      },
      '/sasl.jaas.config',
      /must end with ;/,
    ],
    ['acks other than all', { VEIL_KAFKA_ACKS: '1' }, '/acks', /veil writes every record with acks=all/],
    [
      'unsecured OAuth tokens',
      { VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', VEIL_KAFKA_SASL_MECHANISM: 'OAUTHBEARER', VEIL_KAFKA_SASL_OAUTHBEARER_METHOD: 'default' },
      '/sasl.oauthbearer.method',
      /must be oidc/,
    ],
    [
      'an OAuth token endpoint over plain HTTP',
      {
        VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
        VEIL_KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
        VEIL_KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: 'http://idp.example.com/token',
        VEIL_KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'c',
        VEIL_KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 's',
      },
      '/sasl.oauthbearer.token.endpoint.url',
      /must be https/,
    ],
    [
      'OAuth without a client secret',
      {
        VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
        VEIL_KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
        VEIL_KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: 'https://idp.example.com/token',
        VEIL_KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'c',
      },
      '/sasl.oauthbearer.client.secret',
      /needs sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret/,
    ],
    ['a session timeout out of range', { VEIL_KAFKA_SESSION_TIMEOUT_MS: '10' }, '/session.timeout.ms', /from 1000 to 3600000/],
    [
      'a group instance id Kafka would refuse',
      { VEIL_KAFKA_GROUP_INSTANCE_ID: 'pod name/with space' },
      '/group.instance.id',
      /VEIL_KAFKA_GROUP_INSTANCE_ID must be 1 to 249/,
    ],
  ])('refuses %s at start, naming the property', (_, env, pointer, message) => {
    const r = refusal(() => kafkaConnection({ KAFKA_BROKERS: 'b:9092', ...env }));
    expect(r.pointer).toBe(pointer);
    expect(r.message).toMatch(message);
  });

  it('refuses an unknown property in the file, naming it and the file', async () => {
    const props = await file('unknown.properties', 'security.protocol=SSL\nssl.truststore.location=/etc/kafka/truststore.jks\n');
    const r = refusal(() => kafkaConnection({ KAFKA_BROKERS: 'b', VEIL_KAFKA_CONFIG_FILE: props }));
    expect(r.pointer).toBe('/ssl.truststore.location');
    expect(r.message).toContain(props);
  });

  it('TLS: the CA bundle and the client certificate read and checked at start; an expired certificate, a half pair, a wrong key password refused', async () => {
    const client = pki.client('veil');
    const c = kafkaConnection({
      KAFKA_BROKERS: 'b:9093',
      VEIL_KAFKA_SECURITY_PROTOCOL: 'SSL',
      VEIL_KAFKA_SSL_CA_LOCATION: pki.ca,
      VEIL_KAFKA_SSL_CERTIFICATE_LOCATION: client.cert,
      VEIL_KAFKA_SSL_KEY_LOCATION: client.key,
    });
    expect(c.tls).toMatchObject({ ca: { path: pki.ca }, certificate: { path: client.cert }, key: { path: client.key }, verifyHostname: true });
    expect(c.tls!.ca!.pem).toContain('BEGIN CERTIFICATE');
    const ssl = (env: Record<string, string>) => kafkaConnection({ KAFKA_BROKERS: 'b:9093', VEIL_KAFKA_SECURITY_PROTOCOL: 'SSL', ...env });
    expect(refusal(() => ssl({ VEIL_KAFKA_SSL_CERTIFICATE_LOCATION: pki.expired.cert, VEIL_KAFKA_SSL_KEY_LOCATION: pki.expired.key })).message).toMatch(
      /expired on/,
    );
    expect(refusal(() => ssl({ VEIL_KAFKA_SSL_CERTIFICATE_LOCATION: client.cert })).pointer).toBe('/ssl.key.location');
    expect(refusal(() => ssl({ VEIL_KAFKA_SSL_CA_LOCATION: client.key })).message).toMatch(/holds no PEM certificate/);
    expect(ssl({ VEIL_KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM: 'none' }).tls!.verifyHostname).toBe(false);
    // the broker's key is encrypted: its password opens it, another does not
    const keystore = pki.brokerKeystore;
    expect(
      ssl({
        VEIL_KAFKA_SSL_CERTIFICATE_LOCATION: keystore,
        VEIL_KAFKA_SSL_KEY_LOCATION: keystore,
        VEIL_KAFKA_SSL_KEY_PASSWORD: pki.brokerKeyPassword,
      }).tls!.keyPassword!.reveal(),
    ).toBe(pki.brokerKeyPassword);
    expect(
      refusal(() => ssl({ VEIL_KAFKA_SSL_CERTIFICATE_LOCATION: keystore, VEIL_KAFKA_SSL_KEY_LOCATION: keystore, VEIL_KAFKA_SSL_KEY_PASSWORD: 'wrong' })),
    ).toMatchObject({ pointer: '/ssl.key.password' });
    expect(refusal(() => ssl({ VEIL_KAFKA_SSL_CERTIFICATE_LOCATION: keystore, VEIL_KAFKA_SSL_KEY_LOCATION: keystore })).message).toMatch(
      /is encrypted and ssl.key.password is not set/,
    );
  });

  it('OAUTHBEARER from Java-style JAAS options (client id, secret, scope, extensions) or the properties', async () => {
    const props = await file(
      'oauth.properties',
      `security.protocol=SASL_SSL
sasl.mechanism=OAUTHBEARER
sasl.oauthbearer.token.endpoint.url=https://idp.example.com/oauth2/token
sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler
sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId='veil' clientSecret='abc' scope='kafka' extension_logicalCluster='lkc-1' extension_identityPoolId='pool-2';
`,
    );
    const c = kafkaConnection({ KAFKA_BROKERS: 'b', VEIL_KAFKA_CONFIG_FILE: props });
    expect(c.sasl).toMatchObject({ mechanism: 'OAUTHBEARER', tokens: { clientId: 'veil' } });
    expect(JSON.stringify(c)).not.toContain('abc');
  });

  it('the control store and the subject-key topic: the main cluster, or their own with their own settings only', () => {
    const main = {
      KAFKA_BROKERS: 'main:9092',
      VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      VEIL_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256',
      VEIL_KAFKA_SASL_USERNAME: 'u',
      VEIL_KAFKA_SASL_PASSWORD: 'p',
    };
    expect(controlKafkaConnection(main)).toMatchObject({ scope: 'VEIL_KAFKA_', brokers: ['main:9092'], protocol: 'SASL_SSL' });
    expect(subjectKafkaConnection(main)).toMatchObject({ brokers: ['main:9092'], protocol: 'SASL_SSL' });
    // another cluster: nothing of the main cluster's is sent to it
    const other = controlKafkaConnection({ ...main, VEIL_CONTROL_BROKERS: 'ctl:9093', VEIL_CONTROL_KAFKA_SECURITY_PROTOCOL: 'SSL' });
    expect(other).toMatchObject({ scope: 'VEIL_CONTROL_KAFKA_', brokers: ['ctl:9093'], protocol: 'SSL' });
    expect(other.sasl).toBeUndefined();
    expect(subjectKafkaConnection({ ...main, VEIL_CONTROL_BROKERS: 'ctl:9093' })).toMatchObject({ brokers: ['ctl:9093'], protocol: 'PLAINTEXT' });
    expect(subjectKafkaConnection({ ...main, VEIL_SUBJECT_BROKERS: 'sub:9094' })).toMatchObject({ scope: 'VEIL_SUBJECT_KAFKA_', brokers: ['sub:9094'] });
    expect(refusal(() => controlKafkaConnection({ ...main, VEIL_CONTROL_KAFKA_SASL_PASSWORD: 'x' })).message).toMatch(
      /VEIL_CONTROL_KAFKA_SASL_PASSWORD is set but VEIL_CONTROL_BROKERS is not/,
    );
  });
});

describe("each client's form of the same settings", () => {
  const scram = (): KafkaConnection =>
    kafkaConnection({
      KAFKA_BROKERS: 'b:9093',
      VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      VEIL_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      VEIL_KAFKA_SASL_USERNAME: 'u',
      VEIL_KAFKA_SASL_PASSWORD: 'pw',
      VEIL_KAFKA_SSL_CA_LOCATION: pki.ca,
    });

  it("librdkafka: its own property names, the CA's path", () => {
    expect(librdkafkaSecurity(scram())).toEqual({
      'security.protocol': 'sasl_ssl',
      'enable.ssl.certificate.verification': true,
      'ssl.endpoint.identification.algorithm': 'https',
      'ssl.ca.location': pki.ca,
      'sasl.mechanisms': 'SCRAM-SHA-512',
      'sasl.username': 'u',
      'sasl.password': 'pw',
    });
    expect(librdkafkaSecurity(kafkaConnection({ KAFKA_BROKERS: 'b' }))).toEqual({ 'security.protocol': 'plaintext' });
  });

  it("kafkajs: tls.connect's options (the CA's text, hostname checked) and its SASL mechanism", () => {
    const s = kafkajsSecurity(scram());
    expect(s.ssl).toMatchObject({ rejectUnauthorized: true, ca: [expect.stringContaining('BEGIN CERTIFICATE')] });
    expect((s.ssl as { checkServerIdentity?: unknown }).checkServerIdentity).toBeUndefined();
    expect(s.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'u', password: 'pw' });
    const noHostname = kafkajsSecurity(
      kafkaConnection({ KAFKA_BROKERS: 'b', VEIL_KAFKA_SECURITY_PROTOCOL: 'SSL', VEIL_KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM: 'none' }),
    );
    expect(typeof (noHostname.ssl as { checkServerIdentity?: unknown }).checkServerIdentity).toBe('function');
  });
});
