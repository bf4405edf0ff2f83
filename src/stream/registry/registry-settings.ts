import { VeilError } from '../../engine/index.ts';
import type { Env } from '../../env/index.ts';
import {
  certificateFile,
  privateKeyFile,
  readEnvProperties,
  readPropertiesFile,
  registryEnvName,
  REGISTRY_PROPERTIES,
  Secret,
  type PemFile,
  type PropertyValue,
} from '../../kafka/index.ts';

/**
 * How to reach the schema registry: its API base (no credentials in it), its authentication —
 * HTTP Basic (Confluent's basic.auth.user.info, or user:password in the URL) or a bearer token —
 * and TLS (a CA bundle, a client certificate and key). Secrets are `Secret`s: the object can be
 * logged without giving one away, and none reaches a message.
 */
export interface RegistrySettings {
  url: string;
  auth?: { kind: 'basic'; user: string; password: Secret } | { kind: 'bearer'; token: Secret };
  tls?: { ca?: PemFile; certificate?: PemFile; key?: PemFile; keyPassword?: Secret };
}

type RegistryProperty = (typeof REGISTRY_PROPERTIES)[number];

const invalid = (message: string, property: string) => new VeilError('CONFIG_INVALID', message, [{ code: 'CONFIG_INVALID', pointer: `/${property}`, message }]);

/**
 * The registry's settings: `url` (the --registry flag) over SCHEMA_REGISTRY_URL over
 * schema.registry.url of VEIL_KAFKA_CONFIG_FILE; the rest from SCHEMA_REGISTRY_<name> (each also
 * as <name>_FILE) over the same file. Undefined when no URL is given anywhere. Credentials are
 * refused over plain HTTP to anything but a loopback address.
 */
export function registrySettings(env: Env, options: { url?: string; now?: Date } = {}): RegistrySettings | undefined {
  const p = registryProperties(env);
  const given = options.url ? { value: options.url, from: '--registry' } : p.get('schema.registry.url');
  if (!given) return undefined;
  let url: URL;
  try {
    url = new URL(given.value);
  } catch {
    throw invalid(`schema.registry.url (${given.from}) is not a URL`, 'schema.registry.url');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(`schema.registry.url (${given.from}) must be http or https`, 'schema.registry.url');
  const auth = registryAuth(p, url, given.from);
  if ([...p.keys()].some((k) => k.startsWith('schema.registry.ssl.')) && url.protocol !== 'https:')
    throw invalid(`schema.registry.ssl.* is set but schema.registry.url (${given.from}) is not https`, 'schema.registry.url');
  const tls = registryTls(p, options.now ?? new Date());
  const loopback = ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
  if (auth && url.protocol === 'http:' && !loopback)
    throw invalid(
      `schema.registry.url (${given.from}) is http: the registry's credentials would cross the network unencrypted (use https)`,
      'schema.registry.url',
    );
  url.username = '';
  url.password = '';
  return { url: url.toString().replace(/\/+$/, ''), ...(auth ? { auth } : {}), ...(tls ? { tls } : {}) };
}

function registryProperties(env: Env): Map<RegistryProperty, PropertyValue> {
  const file = env.VEIL_KAFKA_CONFIG_FILE ? readPropertiesFile(env.VEIL_KAFKA_CONFIG_FILE, 'VEIL_KAFKA_CONFIG_FILE') : undefined;
  const out = new Map<RegistryProperty, PropertyValue>();
  for (const name of REGISTRY_PROPERTIES) {
    const v = file?.get(name);
    if (v) out.set(name, v);
  }
  for (const [name, v] of readEnvProperties(env, 'SCHEMA_REGISTRY_', REGISTRY_PROPERTIES, registryEnvName, [])) out.set(name, v);
  return out;
}

function registryAuth(p: Map<RegistryProperty, PropertyValue>, url: URL, urlFrom: string): RegistrySettings['auth'] {
  const source = p.get('basic.auth.credentials.source');
  const userInfo = p.get('basic.auth.user.info');
  const bearerSource = p.get('bearer.auth.credentials.source');
  const token = p.get('bearer.auth.token');
  if (source && !['USER_INFO', 'URL'].includes(source.value.toUpperCase()))
    throw invalid(`basic.auth.credentials.source (${source.from}) must be USER_INFO or URL`, 'basic.auth.credentials.source');
  if (bearerSource && bearerSource.value.toUpperCase() !== 'STATIC_TOKEN')
    throw invalid(`bearer.auth.credentials.source (${bearerSource.from}) must be STATIC_TOKEN`, 'bearer.auth.credentials.source');
  const inUrl = url.username !== '' || url.password !== '';
  const basic = userInfo
    ? splitUserInfo(userInfo)
    : inUrl
      ? { user: decodeURIComponent(url.username), password: new Secret(decodeURIComponent(url.password)) }
      : undefined;
  if (userInfo && inUrl)
    throw invalid(
      `basic.auth.user.info (${userInfo.from}) and credentials in schema.registry.url (${urlFrom}) are both given: give one`,
      'basic.auth.user.info',
    );
  if (basic && token) throw invalid(`basic.auth.user.info and bearer.auth.token (${token.from}) are both given: give one`, 'bearer.auth.token');
  if (token) return { kind: 'bearer', token: new Secret(token.value) };
  return basic ? { kind: 'basic', ...basic } : undefined;
}

function splitUserInfo(at: PropertyValue): { user: string; password: Secret } {
  const colon = at.value.indexOf(':');
  if (colon <= 0) throw invalid(`basic.auth.user.info (${at.from}) must be user:password`, 'basic.auth.user.info');
  return { user: at.value.slice(0, colon), password: new Secret(at.value.slice(colon + 1)) };
}

function registryTls(p: Map<RegistryProperty, PropertyValue>, now: Date): RegistrySettings['tls'] {
  const ca = p.get('schema.registry.ssl.ca.location');
  const cert = p.get('schema.registry.ssl.certificate.location');
  const key = p.get('schema.registry.ssl.key.location');
  const password = p.get('schema.registry.ssl.key.password');
  if (!ca && !cert && !key && !password) return undefined;
  if (!cert !== !key)
    throw invalid(
      'schema.registry.ssl.certificate.location and schema.registry.ssl.key.location go together',
      cert ? 'schema.registry.ssl.key.location' : 'schema.registry.ssl.certificate.location',
    );
  const keyPassword = password ? new Secret(password.value) : undefined;
  return {
    ...(ca ? { ca: certificateFile('schema.registry.ssl.ca.location', ca, { checkValidity: false, now }) } : {}),
    ...(cert ? { certificate: certificateFile('schema.registry.ssl.certificate.location', cert, { checkValidity: true, now }) } : {}),
    ...(key ? { key: privateKeyFile('schema.registry.ssl.key.location', key, keyPassword) } : {}),
    ...(keyPassword ? { keyPassword } : {}),
  };
}
