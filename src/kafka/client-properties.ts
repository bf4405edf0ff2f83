import { readFileSync } from 'node:fs';
import { parse } from 'dot-properties';
import { VeilError } from '../engine/index.ts';
import type { Env } from '../env/index.ts';

/**
 * The Kafka client properties veil reads, by librdkafka's names (Java's where librdkafka has none:
 * sasl.jaas.config, sasl.login.callback.handler.class, client.dns.lookup), the ones Confluent
 * Cloud, MSK, Aiven and Strimzi hand out in a client.properties. Anything else is refused, so
 * that a setting veil would not apply (a typo, a JKS truststore) is said at start rather than
 * silently left out.
 */
export const KAFKA_PROPERTIES = [
  'bootstrap.servers',
  'security.protocol',
  'sasl.mechanism',
  'sasl.mechanisms',
  'sasl.username',
  'sasl.password',
  'sasl.jaas.config',
  'sasl.oauthbearer.method',
  'sasl.oauthbearer.token.endpoint.url',
  'sasl.oauthbearer.client.id',
  'sasl.oauthbearer.client.secret',
  'sasl.oauthbearer.scope',
  'sasl.oauthbearer.extensions',
  'sasl.login.callback.handler.class',
  'ssl.ca.location',
  'ssl.certificate.location',
  'ssl.key.location',
  'ssl.key.password',
  'ssl.endpoint.identification.algorithm',
  'session.timeout.ms',
  'group.instance.id',
  'client.dns.lookup',
  'acks',
] as const;

/**
 * The schema registry's properties in the same file, by the names of Confluent's serializers
 * (schema.registry.url, basic.auth.*, bearer.auth.*) and schema.registry.ssl.* for its TLS; in the
 * environment SCHEMA_REGISTRY_<the rest> (SCHEMA_REGISTRY_URL, SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO).
 */
export const REGISTRY_PROPERTIES = [
  'schema.registry.url',
  'basic.auth.credentials.source',
  'basic.auth.user.info',
  'bearer.auth.credentials.source',
  'bearer.auth.token',
  'schema.registry.ssl.ca.location',
  'schema.registry.ssl.certificate.location',
  'schema.registry.ssl.key.location',
  'schema.registry.ssl.key.password',
] as const;

export type KafkaProperty = (typeof KAFKA_PROPERTIES)[number];
export type RegistryProperty = (typeof REGISTRY_PROPERTIES)[number];

/** A property's value and where it came from (an environment variable's name or a file's path), for messages. */
export interface PropertyValue {
  value: string;
  from: string;
}
export type ClientProperties<P extends string> = ReadonlyMap<P, PropertyValue>;

/** Where one cluster's settings come from: VEIL_KAFKA_*, VEIL_CONTROL_KAFKA_*, VEIL_SUBJECT_KAFKA_*. */
export interface PropertyScope {
  /** the environment prefix: VEIL_KAFKA_ */
  prefix: string;
}

const invalid = (message: string, property: string) => new VeilError('CONFIG_INVALID', message, [{ code: 'CONFIG_INVALID', pointer: `/${property}`, message }]);

/** VEIL_KAFKA_ + the property upper-cased, dots as underscores: sasl.password → VEIL_KAFKA_SASL_PASSWORD */
export const envName = (prefix: string, property: string): string => prefix + property.toUpperCase().replace(/[.-]/g, '_');

/** a registry property's variable: schema.registry.url → SCHEMA_REGISTRY_URL, basic.auth.user.info → SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO */
export const registryEnvName = (property: string): string => envName('SCHEMA_REGISTRY_', property.replace(/^schema\.registry\./, ''));

/** The text of a `_FILE` variable's file: one trailing newline dropped (as `echo` and kubectl write them). */
function secretFile(path: string, variable: string): string {
  try {
    return readFileSync(path, 'utf8').replace(/\r?\n$/, '');
  } catch (e) {
    throw invalid(`${variable}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, variable);
  }
}

/** The properties of a client.properties file (Java's format: comments, continuations, escapes), each a known one. */
export function readPropertiesFile(path: string, variable: string): Map<string, PropertyValue> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw invalid(`${variable}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, variable);
  }
  const known = new Set<string>([...KAFKA_PROPERTIES, ...REGISTRY_PROPERTIES]);
  const out = new Map<string, PropertyValue>();
  for (const [key, value] of Object.entries(parse(text) as Record<string, string>)) {
    if (!known.has(key)) throw invalid(`${path} (${variable}): unknown property ${key}; veil reads ${[...known].join(', ')}`, key);
    out.set(key, { value, from: path });
  }
  return out;
}

/**
 * The environment's values of `properties` named `<name>` or `<name>_FILE` (the file's text: a
 * secret mounted from a Kubernetes Secret); both at once is refused. Variables that start with
 * `prefix` but name no property are refused, except `except`.
 */
export function readEnvProperties<P extends string>(
  env: Env,
  prefix: string,
  properties: readonly P[],
  nameOf: (p: P) => string,
  except: readonly string[],
): Map<P, PropertyValue> {
  const byName = new Map(properties.map((p) => [nameOf(p), p]));
  const out = new Map<P, PropertyValue>();
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(prefix) || value === undefined || except.includes(name)) continue;
    const base = name.endsWith('_FILE') ? name.slice(0, -'_FILE'.length) : name;
    const property = byName.get(base) ?? byName.get(name);
    if (property === undefined) throw invalid(`${name}: no such setting; veil reads ${[...byName.keys()].join(', ')} (each also as <name>_FILE)`, name);
    if (base !== name && byName.has(base)) {
      if (env[base] !== undefined) throw invalid(`${base} and ${name} are both set: give one`, base);
      out.set(property, { value: secretFile(value, name), from: name });
    } else {
      out.set(property, { value, from: name });
    }
  }
  return out;
}

/** The Kafka properties of a scope: its file's (`<prefix>CONFIG_FILE`), then its variables over them. */
export function kafkaProperties(env: Env, scope: PropertyScope): { properties: Map<KafkaProperty, PropertyValue>; file?: Map<string, PropertyValue> } {
  const fileVariable = `${scope.prefix}CONFIG_FILE`;
  const path = env[fileVariable];
  const file = path ? readPropertiesFile(path, fileVariable) : undefined;
  const properties = new Map<KafkaProperty, PropertyValue>();
  for (const p of KAFKA_PROPERTIES) {
    const v = file?.get(p);
    if (v) properties.set(p, v);
  }
  for (const [p, v] of readEnvProperties(env, scope.prefix, KAFKA_PROPERTIES, (q) => envName(scope.prefix, q), [fileVariable])) properties.set(p, v);
  return { properties, ...(file ? { file } : {}) };
}

export { invalid as invalidSetting };
