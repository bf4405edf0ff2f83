import type { Env } from '../env/index.ts';
import { invalidSetting as invalid, kafkaProperties, type KafkaProperty, type PropertyValue } from './client-properties.ts';
import { parseJaasConfig, type JaasConfig } from './jaas-config.ts';
import { KafkaError } from './kafka-error.ts';
import { oidcTokenSource, type OidcTokenSource } from './oidc-token.ts';
import { groupInstanceId } from './open-port.ts';
import { Secret } from './secret.ts';
import { certificateFile, privateKeyFile, type PemFile } from './tls-files.ts';

export const SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] as const;
export type SecurityProtocol = (typeof SECURITY_PROTOCOLS)[number];
export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'] as const;

export interface TlsSettings {
  /** the CA bundle the brokers' certificates are checked against (else the system's) */
  ca?: PemFile;
  /** mutual TLS: the client's certificate (chain) and private key */
  certificate?: PemFile;
  key?: PemFile;
  keyPassword?: Secret;
  /** the broker's name checked against its certificate (ssl.endpoint.identification.algorithm=https, the default) */
  verifyHostname: boolean;
}

export type SaslSettings =
  { mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'; username: string; password: Secret } | { mechanism: 'OAUTHBEARER'; tokens: OidcTokenSource };

/**
 * How to reach one Kafka cluster: its brokers and the security every connection to it uses — the
 * one place both client adapters, the compacted-topic logs and the topic sampler take them from.
 * Secrets are `Secret`s; the object can be logged (pino, JSON) without giving one away.
 */
export interface KafkaConnection {
  /** the environment prefix its settings came from (VEIL_KAFKA_, VEIL_CONTROL_KAFKA_, VEIL_SUBJECT_KAFKA_), for messages */
  readonly scope: string;
  readonly brokers: readonly string[];
  readonly protocol: SecurityProtocol;
  readonly tls?: TlsSettings;
  readonly sasl?: SaslSettings;
  /** consumers' session.timeout.ms */
  readonly sessionTimeoutMs?: number;
  /** static group membership (group.instance.id): stream consumers only */
  readonly groupInstanceId?: string;
}

export interface ConnectionOptions {
  /** brokers given on the command line (--brokers): over every other source */
  brokers?: readonly string[];
  /** brokers when no source names any (the command line's 127.0.0.1:9092) */
  defaultBrokers?: readonly string[];
  now?: Date;
}

/** the brokers of a command that names none: a broker on this host */
export const DEFAULT_BROKERS: readonly string[] = ['127.0.0.1:9092'];

export const MAIN_SCOPE = 'VEIL_KAFKA_';
export const CONTROL_SCOPE = 'VEIL_CONTROL_KAFKA_';
export const SUBJECT_SCOPE = 'VEIL_SUBJECT_KAFKA_';

const splitBrokers = (text: string) =>
  text
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);

/** The main cluster's connection: brokers (--brokers, KAFKA_BROKERS or bootstrap.servers) and VEIL_KAFKA_CONFIG_FILE / VEIL_KAFKA_*. */
export function kafkaConnection(env: Env, options: ConnectionOptions = {}): KafkaConnection {
  return resolveScope(env, MAIN_SCOPE, 'KAFKA_BROKERS', options);
}

/**
 * The control store's cluster: with VEIL_CONTROL_BROKERS another cluster, whose settings are
 * VEIL_CONTROL_KAFKA_CONFIG_FILE / VEIL_CONTROL_KAFKA_* alone — the main cluster's credentials are
 * never sent to other brokers; without it the main cluster's connection.
 */
export function controlKafkaConnection(env: Env, options: ConnectionOptions = {}): KafkaConnection {
  return env.VEIL_CONTROL_BROKERS
    ? resolveScope(env, CONTROL_SCOPE, 'VEIL_CONTROL_BROKERS', { now: options.now })
    : unscoped(env, CONTROL_SCOPE, 'VEIL_CONTROL_BROKERS', () => kafkaConnection(env, options));
}

/** The subject-key topic's cluster: VEIL_SUBJECT_BROKERS with VEIL_SUBJECT_KAFKA_*, else the control store's. */
export function subjectKafkaConnection(env: Env, options: ConnectionOptions = {}): KafkaConnection {
  return env.VEIL_SUBJECT_BROKERS
    ? resolveScope(env, SUBJECT_SCOPE, 'VEIL_SUBJECT_BROKERS', { now: options.now })
    : unscoped(env, SUBJECT_SCOPE, 'VEIL_SUBJECT_BROKERS', () => controlKafkaConnection(env, options));
}

/** A scope's settings without its brokers variable are refused: they would apply to no cluster. */
function unscoped(env: Env, prefix: string, brokersVariable: string, inherit: () => KafkaConnection): KafkaConnection {
  const stray = Object.keys(env).find((k) => k.startsWith(prefix) && env[k] !== undefined);
  if (stray)
    throw invalid(
      `${stray} is set but ${brokersVariable} is not: without it this store is on the main cluster and uses VEIL_KAFKA_* (set ${brokersVariable} for a cluster of its own)`,
      stray,
    );
  return inherit();
}

function resolveScope(env: Env, prefix: string, brokersVariable: string, options: ConnectionOptions): KafkaConnection {
  const { properties: p } = kafkaProperties(env, { prefix });
  const get = (name: KafkaProperty) => p.get(name);
  const brokers = resolveBrokers(env, brokersVariable, get('bootstrap.servers'), options);
  const protocol = securityProtocol(get('security.protocol'));
  checkAccepted(p);
  const usesTls = protocol === 'SSL' || protocol === 'SASL_SSL';
  const usesSasl = protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL';
  if (!usesTls) refuseAny(p, 'ssl.', protocol);
  if (!usesSasl) refuseAny(p, 'sasl.', protocol);
  const tls = usesTls ? tlsSettings(p, options.now ?? new Date()) : undefined;
  const sasl = usesSasl ? saslSettings(p, protocol) : undefined;
  const timeout = get('session.timeout.ms');
  const instance = get('group.instance.id');
  return {
    scope: prefix,
    brokers,
    protocol,
    ...(tls ? { tls } : {}),
    ...(sasl ? { sasl } : {}),
    ...(timeout ? { sessionTimeoutMs: integer('session.timeout.ms', timeout, 1000, 3_600_000) } : {}),
    ...(instance ? { groupInstanceId: groupInstance(instance) } : {}),
  };
}

function resolveBrokers(env: Env, variable: string, bootstrap: PropertyValue | undefined, options: ConnectionOptions): string[] {
  if (options.brokers?.length) return [...options.brokers];
  const fromEnv = env[variable] ? splitBrokers(env[variable]!) : [];
  const fromProperty = bootstrap ? splitBrokers(bootstrap.value) : [];
  if (fromEnv.length && fromProperty.length && fromEnv.join(',') !== fromProperty.join(',')) {
    throw invalid(`${variable} and bootstrap.servers (${bootstrap!.from}) name different brokers: give one`, 'bootstrap.servers');
  }
  const brokers = fromEnv.length ? fromEnv : fromProperty.length ? fromProperty : [...(options.defaultBrokers ?? [])];
  if (brokers.length === 0) throw invalid(`no Kafka brokers: set ${variable} or bootstrap.servers`, 'bootstrap.servers');
  return brokers;
}

function securityProtocol(at: PropertyValue | undefined): SecurityProtocol {
  if (!at) return 'PLAINTEXT';
  const value = at.value.toUpperCase();
  if (!(SECURITY_PROTOCOLS as readonly string[]).includes(value))
    throw invalid(`security.protocol (${at.from}) must be one of ${SECURITY_PROTOCOLS.join(', ')}`, 'security.protocol');
  return value as SecurityProtocol;
}

/** What veil decides itself, accepted only where the file agrees: every write is acks=all. */
function checkAccepted(p: ReadonlyMap<KafkaProperty, PropertyValue>): void {
  const acks = p.get('acks');
  if (acks && !['all', '-1'].includes(acks.value.toLowerCase()))
    throw invalid(`acks (${acks.from}) must be all: veil writes every record with acks=all`, 'acks');
}

function refuseAny(p: ReadonlyMap<KafkaProperty, PropertyValue>, family: string, protocol: SecurityProtocol): void {
  for (const [name, at] of p) {
    if (name.startsWith(family))
      throw invalid(`${name} (${at.from}) is set but security.protocol is ${protocol}, which uses no ${family === 'ssl.' ? 'TLS' : 'SASL'}`, name);
  }
}

function tlsSettings(p: ReadonlyMap<KafkaProperty, PropertyValue>, now: Date): TlsSettings {
  const cert = p.get('ssl.certificate.location');
  const key = p.get('ssl.key.location');
  if (!cert !== !key)
    throw invalid(
      `${cert ? 'ssl.certificate.location' : 'ssl.key.location'} is set without ${cert ? 'ssl.key.location' : 'ssl.certificate.location'}: mutual TLS needs both`,
      cert ? 'ssl.key.location' : 'ssl.certificate.location',
    );
  const password = p.get('ssl.key.password');
  if (password && !key) throw invalid(`ssl.key.password (${password.from}) is set without ssl.key.location`, 'ssl.key.password');
  const keyPassword = password ? new Secret(password.value) : undefined;
  const algorithm = p.get('ssl.endpoint.identification.algorithm');
  const verify = algorithm === undefined ? 'https' : algorithm.value.toLowerCase();
  if (!['https', 'none', ''].includes(verify))
    throw invalid(`ssl.endpoint.identification.algorithm (${algorithm!.from}) must be https or none`, 'ssl.endpoint.identification.algorithm');
  const ca = p.get('ssl.ca.location');
  return {
    ...(ca ? { ca: certificateFile('ssl.ca.location', ca, { checkValidity: false, now }) } : {}),
    ...(cert ? { certificate: certificateFile('ssl.certificate.location', cert, { checkValidity: true, now }) } : {}),
    ...(key ? { key: privateKeyFile('ssl.key.location', key, keyPassword) } : {}),
    ...(keyPassword ? { keyPassword } : {}),
    verifyHostname: verify === 'https',
  };
}

function saslSettings(p: ReadonlyMap<KafkaProperty, PropertyValue>, protocol: SecurityProtocol): SaslSettings {
  const mechanism = saslMechanism(p);
  const jaas = jaasOf(p.get('sasl.jaas.config'));
  const family = mechanism.startsWith('SCRAM') ? 'SCRAM' : mechanism;
  if (jaas && jaas.family !== family)
    throw invalid(`sasl.jaas.config names a ${jaas.family} login module but sasl.mechanism is ${mechanism}`, 'sasl.jaas.config');
  if (protocol === 'SASL_PLAINTEXT' && mechanism !== 'SCRAM-SHA-256' && mechanism !== 'SCRAM-SHA-512') {
    throw invalid(
      `security.protocol SASL_PLAINTEXT with ${mechanism} would send the ${mechanism === 'PLAIN' ? 'password' : 'token'} unencrypted: use SASL_SSL (or SCRAM)`,
      'security.protocol',
    );
  }
  if (mechanism === 'OAUTHBEARER') return { mechanism, tokens: oidcTokenSource(oidcSettings(p, jaas)) };
  const username = oneOf(p, 'sasl.username', jaas, 'username');
  const password = oneOf(p, 'sasl.password', jaas, 'password');
  if (!username || !password)
    throw invalid(`sasl.mechanism ${mechanism} needs sasl.username and sasl.password (or sasl.jaas.config)`, username ? 'sasl.password' : 'sasl.username');
  return { mechanism, username, password: new Secret(password) };
}

function saslMechanism(p: ReadonlyMap<KafkaProperty, PropertyValue>): (typeof SASL_MECHANISMS)[number] {
  const one = p.get('sasl.mechanism');
  const many = p.get('sasl.mechanisms');
  if (one && many && one.value.toUpperCase() !== many.value.toUpperCase())
    throw invalid(`sasl.mechanism (${one.from}) and sasl.mechanisms (${many.from}) differ`, 'sasl.mechanism');
  const at = one ?? many;
  if (!at) throw invalid(`a SASL security.protocol needs sasl.mechanism: ${SASL_MECHANISMS.join(', ')}`, 'sasl.mechanism');
  const value = at.value.toUpperCase();
  if (!(SASL_MECHANISMS as readonly string[]).includes(value))
    throw invalid(
      `sasl.mechanism (${at.from}) must be one of ${SASL_MECHANISMS.join(', ')}${value === 'GSSAPI' ? ' (Kerberos is not supported)' : ''}`,
      'sasl.mechanism',
    );
  return value as (typeof SASL_MECHANISMS)[number];
}

function jaasOf(at: PropertyValue | undefined): JaasConfig | undefined {
  if (!at) return undefined;
  try {
    return parseJaasConfig(at.value);
  } catch (e) {
    if (e instanceof KafkaError && e.code === 'JAAS_CONFIG_INVALID') throw invalid(`sasl.jaas.config (${at.from}): ${e.message}`, 'sasl.jaas.config');
    throw e;
  }
}

/** A value given as a property or a JAAS option; both given and different is a contradiction. */
function oneOf(p: ReadonlyMap<KafkaProperty, PropertyValue>, property: KafkaProperty, jaas: JaasConfig | undefined, option: string): string | undefined {
  const direct = p.get(property);
  const fromJaas = jaas?.options[option];
  if (direct && fromJaas !== undefined && direct.value !== fromJaas)
    throw invalid(`${property} (${direct.from}) and sasl.jaas.config's ${option} differ: give one`, property);
  return direct?.value ?? fromJaas;
}

const OAUTH_HANDLER = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler';

function oidcSettings(p: ReadonlyMap<KafkaProperty, PropertyValue>, jaas: JaasConfig | undefined) {
  const method = p.get('sasl.oauthbearer.method');
  if (method && method.value.toLowerCase() !== 'oidc')
    throw invalid(`sasl.oauthbearer.method (${method.from}) must be oidc: unsecured tokens (default) are for testing brokers only`, 'sasl.oauthbearer.method');
  const handler = p.get('sasl.login.callback.handler.class');
  if (handler && handler.value !== OAUTH_HANDLER && !handler.value.endsWith('.OAuthBearerLoginCallbackHandler'))
    throw invalid(
      `sasl.login.callback.handler.class (${handler.from}): only Kafka's OAuthBearerLoginCallbackHandler (OIDC client credentials) is supported`,
      'sasl.login.callback.handler.class',
    );
  const endpoint = p.get('sasl.oauthbearer.token.endpoint.url');
  if (!endpoint)
    throw invalid('sasl.mechanism OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url (OIDC client credentials)', 'sasl.oauthbearer.token.endpoint.url');
  const url = tokenEndpoint(endpoint);
  const clientId = oneOf(p, 'sasl.oauthbearer.client.id', jaas, 'clientId');
  const clientSecret = oneOf(p, 'sasl.oauthbearer.client.secret', jaas, 'clientSecret');
  if (!clientId || !clientSecret)
    throw invalid(
      'sasl.mechanism OAUTHBEARER needs sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret',
      clientId ? 'sasl.oauthbearer.client.secret' : 'sasl.oauthbearer.client.id',
    );
  const scope = oneOf(p, 'sasl.oauthbearer.scope', jaas, 'scope');
  return {
    tokenEndpoint: url,
    clientId,
    clientSecret: new Secret(clientSecret),
    ...(scope ? { scope } : {}),
    extensions: extensions(p.get('sasl.oauthbearer.extensions'), jaas),
  };
}

/** The token endpoint: https, or http to a loopback address only (the client secret crosses it). */
function tokenEndpoint(at: PropertyValue): URL {
  let url: URL;
  try {
    url = new URL(at.value);
  } catch {
    throw invalid(`sasl.oauthbearer.token.endpoint.url (${at.from}) is not a URL`, 'sasl.oauthbearer.token.endpoint.url');
  }
  const loopback = ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    throw invalid(
      `sasl.oauthbearer.token.endpoint.url (${at.from}) must be https (http only to a loopback address): the client secret is sent to it`,
      'sasl.oauthbearer.token.endpoint.url',
    );
  if (url.username || url.password)
    throw invalid(
      `sasl.oauthbearer.token.endpoint.url (${at.from}) must not carry credentials: use sasl.oauthbearer.client.id and client.secret`,
      'sasl.oauthbearer.token.endpoint.url',
    );
  return url;
}

/** SASL extensions (Confluent Cloud's logicalCluster, identityPoolId): `a=b,c=d`, or the JAAS options extension_<name>. */
function extensions(at: PropertyValue | undefined, jaas: JaasConfig | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(jaas?.options ?? {})) if (k.startsWith('extension_')) out[k.slice('extension_'.length)] = v;
  for (const pair of at ? at.value.split(',').filter((x) => x.trim()) : []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw invalid(`sasl.oauthbearer.extensions (${at!.from}) must be name=value pairs separated by commas`, 'sasl.oauthbearer.extensions');
    out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  for (const k of Object.keys(out))
    if (!/^[A-Za-z]+$/.test(k) || k === 'auth')
      throw invalid(`sasl.oauthbearer.extensions: ${k} is not a valid extension name (letters only, not auth)`, 'sasl.oauthbearer.extensions');
  return out;
}

function integer(property: string, at: PropertyValue, min: number, max: number): number {
  const n = Number(at.value);
  if (!Number.isInteger(n) || n < min || n > max) throw invalid(`${property} (${at.from}) must be a whole number from ${min} to ${max}`, property);
  return n;
}

function groupInstance(at: PropertyValue): string | undefined {
  try {
    return groupInstanceId(at.value);
  } catch {
    throw invalid(`${at.from} must be 1 to 249 of A-Z a-z 0-9 . _ - (a pod name is): it is group.instance.id`, 'group.instance.id');
  }
}

/** A plaintext connection to `brokers` (tests, benches, the local demo). */
export const plainConnection = (brokers: readonly string[]): KafkaConnection => ({ scope: MAIN_SCOPE, brokers: [...brokers], protocol: 'PLAINTEXT' });
