import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import kafkajs, { Kafka, logLevel, type AclEntry } from 'kafkajs';
import { startOidcProvider, type OidcProvider } from './oidc-provider.ts';
import { freePorts, ROOT, TEST_ENV_SCRIPT } from './processes.ts';
import { makeTestPki, type TestPki } from './tls-certs.ts';

/** The principal every veil process of the security tests runs as, on each listener: SCRAM user, certificate CN, token sub. */
export const PRINCIPAL = 'veil';

export type Listener = 'scram' | 'mtls' | 'oauth';

/**
 * A broker of its own with three secured listeners besides the harness's: SASL_SSL with
 * SCRAM-SHA-512, mutual TLS (SSL, client certificates required, the CN the principal) and
 * SASL_SSL with OAUTHBEARER (tokens of a test OIDC provider, checked against its JWKS) — all
 * under KRaft's StandardAuthorizer with allow.everyone.if.no.acl.found=false. The harness (topics,
 * ACLs, the Java verifier) uses a PLAINTEXT listener whose anonymous principal is the super user;
 * veil is never given it. Certificates are made for the run (tls-certs.ts).
 */
export interface SecureBroker {
  /** the harness's listener (PLAINTEXT, super user) */
  internal: string;
  listeners: Record<Listener, string>;
  pki: TestPki;
  idp: OidcProvider;
  /** the SCRAM password of PRINCIPAL, and of a user with no ACL at all */
  password: string;
  oauthSecret: string;
  admin: Kafka;
  /** VEIL_KAFKA_* of a veil process on a listener, as PRINCIPAL (no secret in the environment itself: _FILE forms) */
  env(listener: Listener, overrides?: Record<string, string>): Record<string, string>;
  /** grants PRINCIPAL the ACLs of a role as docs/kafka-security.md lists them, its placeholders filled */
  grant(role: string, values: Record<string, string>): Promise<void>;
  pid(): Promise<number>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startSecureBroker(label: string): Promise<SecureBroker> {
  const dir = await mkdtemp(join(tmpdir(), `veil-secure-${label}-`));
  const pki = await makeTestPki(join(dir, 'pki'), [PRINCIPAL]);
  const password = `scram-${randomBytes(12).toString('hex')}`;
  const oauthSecret = `oauth-${randomBytes(12).toString('hex')}`;
  const idp = await startOidcProvider({ [PRINCIPAL]: oauthSecret });
  const port = await freePorts(5);
  const listeners: Record<Listener, string> = { scram: `127.0.0.1:${port + 2}`, mtls: `127.0.0.1:${port + 3}`, oauth: `127.0.0.1:${port + 4}` };
  const settings = join(dir, 'listeners.properties');
  await writeFile(settings, listenerSettings(port, pki, idp));
  const passwordFile = join(dir, 'scram.password');
  const secretFile = join(dir, 'oauth.secret');
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  await writeFile(secretFile, oauthSecret, { mode: 0o600 });
  const env = {
    ...process.env,
    VEIL_TEST_ENV_DIR: join(dir, 'run'),
    VEIL_TEST_KAFKA_PORT: String(port),
    VEIL_TEST_KAFKA_CONTROLLER_PORT: String(port + 1),
    VEIL_TEST_KAFKA_LISTENERS: settings,
    VEIL_TEST_KAFKA_SCRAM: `SCRAM-SHA-512=[name=${PRINCIPAL},password=${password}];SCRAM-SHA-512=[name=stranger,password=${password}]`,
    VEIL_TEST_KAFKA_JVM_OPTS: `-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=${idp.jwksUrl},${idp.tokenUrl}`,
  } as Record<string, string>;
  const run = (cmd: string) => promisify(execFile)(TEST_ENV_SCRIPT, [cmd], { env, timeout: 300_000 });
  await run('start-kafka');
  const internal = `127.0.0.1:${port}`;
  const admin = new Kafka({
    clientId: 'secure-harness',
    brokers: [internal],
    logLevel: logLevel.NOTHING,
    retry: { retries: 30, initialRetryTime: 300, maxRetryTime: 3000 },
  });
  const client = pki.client(PRINCIPAL);
  return {
    internal,
    listeners,
    pki,
    idp,
    password,
    oauthSecret,
    admin,
    env(listener, overrides = {}) {
      const common = { KAFKA_BROKERS: listeners[listener], VEIL_KAFKA_SSL_CA_LOCATION: pki.ca };
      const byListener: Record<Listener, Record<string, string>> = {
        scram: {
          VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
          VEIL_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
          VEIL_KAFKA_SASL_USERNAME: PRINCIPAL,
          VEIL_KAFKA_SASL_PASSWORD_FILE: passwordFile,
        },
        mtls: { VEIL_KAFKA_SECURITY_PROTOCOL: 'SSL', VEIL_KAFKA_SSL_CERTIFICATE_LOCATION: client.cert, VEIL_KAFKA_SSL_KEY_LOCATION: client.key },
        oauth: {
          VEIL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
          VEIL_KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
          VEIL_KAFKA_SASL_OAUTHBEARER_METHOD: 'oidc',
          VEIL_KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: idp.tokenUrl,
          VEIL_KAFKA_SASL_OAUTHBEARER_CLIENT_ID: PRINCIPAL,
          VEIL_KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET_FILE: secretFile,
        },
      };
      return { ...common, ...byListener[listener], ...overrides };
    },
    grant: (role, values) => grantRole(admin, role, { BROKERS: internal, PRINCIPAL: `User:${PRINCIPAL}`, ...values }),
    pid: async () => Number((await readFile(join(env.VEIL_TEST_ENV_DIR!, 'kafka.pid'), 'utf8')).trim()),
    restart: async () => void (await run('restart-kafka')),
    async stop() {
      await run('stop-kafka').catch(() => undefined);
      await idp.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function listenerSettings(port: number, pki: TestPki, idp: OidcProvider): string {
  return [
    `listeners=INTERNAL://127.0.0.1:${port},CONTROLLER://127.0.0.1:${port + 1},SCRAM://127.0.0.1:${port + 2},MTLS://127.0.0.1:${port + 3},OAUTH://127.0.0.1:${port + 4}`,
    `advertised.listeners=INTERNAL://127.0.0.1:${port},SCRAM://127.0.0.1:${port + 2},MTLS://127.0.0.1:${port + 3},OAUTH://127.0.0.1:${port + 4}`,
    'inter.broker.listener.name=INTERNAL',
    'listener.security.protocol.map=INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,SCRAM:SASL_SSL,MTLS:SSL,OAUTH:SASL_SSL',
    'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    'allow.everyone.if.no.acl.found=false',
    'super.users=User:ANONYMOUS',
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${pki.brokerKeystore}`,
    `ssl.key.password=${pki.brokerKeyPassword}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${pki.ca}`,
    'listener.name.mtls.ssl.client.auth=required',
    'listener.name.mtls.ssl.principal.mapping.rules=RULE:^CN=([^,]+)$/$1/,DEFAULT',
    'listener.name.scram.sasl.enabled.mechanisms=SCRAM-SHA-512',
    'listener.name.scram.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'listener.name.oauth.sasl.enabled.mechanisms=OAUTHBEARER',
    'listener.name.oauth.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;',
    'listener.name.oauth.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler',
    `sasl.oauthbearer.jwks.endpoint.url=${idp.jwksUrl}`,
    'sasl.oauthbearer.expected.audience=kafka',
    '',
  ].join('\n');
}

// kafkajs' enums are not named ESM exports of the CommonJS package
const { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } = kafkajs;

const OPERATIONS: Record<string, number> = {
  Read: AclOperationTypes.READ,
  Write: AclOperationTypes.WRITE,
  Create: AclOperationTypes.CREATE,
  Delete: AclOperationTypes.DELETE,
  Describe: AclOperationTypes.DESCRIBE,
  DescribeConfigs: AclOperationTypes.DESCRIBE_CONFIGS,
  Alter: AclOperationTypes.ALTER,
  IdempotentWrite: AclOperationTypes.IDEMPOTENT_WRITE,
};

/**
 * The ACLs of a role as docs/kafka-security.md lists them: the `kafka-acls.sh` lines of the code
 * block after `<!-- acl:<role> -->`, with `$NAME` placeholders filled from `values`. The doc is the
 * one list: what the tests grant is what it says.
 */
export function documentedAcls(role: string, values: Record<string, string>): AclEntry[] {
  const doc = readFileSync(join(ROOT, 'docs/kafka-security.md'), 'utf8');
  const block = new RegExp(`<!-- acl:${role} -->\\n\`\`\`sh\\n([\\s\\S]*?)\`\`\``).exec(doc)?.[1];
  if (!block) throw new Error(`docs/kafka-security.md has no ACL block for ${role}`);
  return block
    .trim()
    .split('\n')
    .flatMap((line) => aclLine(line, values));
}

function aclLine(line: string, values: Record<string, string>): AclEntry[] {
  const words = (line.match(/"[^"]*"|\S+/g) ?? []).map((w) =>
    w.replace(/^"|"$/g, '').replace(/\$([A-Z_]+)/g, (_, name: string) => {
      if (values[name] === undefined) throw new Error(`no value for $${name} in: ${line}`);
      return values[name]!;
    }),
  );
  const arg = (flag: string) => words.flatMap((w, i) => (w === flag ? [words[i + 1]!] : []));
  const [principal] = arg('--allow-principal');
  const resource: [number, string][] = [
    ...arg('--topic').map((n): [number, string] => [AclResourceTypes.TOPIC, n]),
    ...arg('--group').map((n): [number, string] => [AclResourceTypes.GROUP, n]),
    ...arg('--transactional-id').map((n): [number, string] => [AclResourceTypes.TRANSACTIONAL_ID, n]),
  ];
  if (!principal || resource.length !== 1) throw new Error(`cannot read the ACL line: ${line}`);
  const pattern = arg('--resource-pattern-type')[0] === 'prefixed' ? ResourcePatternTypes.PREFIXED : ResourcePatternTypes.LITERAL;
  return arg('--operation').map((op) => {
    if (OPERATIONS[op] === undefined) throw new Error(`unknown operation ${op} in: ${line}`);
    return {
      resourceType: resource[0]![0],
      resourceName: resource[0]![1],
      resourcePatternType: pattern,
      principal,
      host: '*',
      operation: OPERATIONS[op]!,
      permissionType: AclPermissionTypes.ALLOW,
    };
  });
}

async function grantRole(admin: Kafka, role: string, values: Record<string, string>): Promise<void> {
  const acl = documentedAcls(role, values);
  const a = admin.admin();
  await a.connect();
  try {
    await a.createAcls({ acl });
  } finally {
    await a.disconnect();
  }
}

export { ROOT };
