import { Agent, fetch as undiciFetch } from 'undici';
import { Secret } from '../../kafka/index.ts';
import type { SchemaRegistryPort } from './registry-port.ts';
import type { RegistrySettings } from './registry-settings.ts';
import { StreamError } from '../stream-error.ts';

export interface ConfluentRegistryOptions {
  /** per HTTP request, connecting included (default 10 s) */
  timeoutMs?: number;
}

/**
 * A Confluent-API schema registry over HTTP (Confluent Schema Registry, Apicurio's
 * /apis/ccompat/v7, Redpanda…), by its settings (registry-settings.ts: the API base, Basic or
 * bearer authentication, TLS) or a URL alone, whose credentials (https://user:pass@…) become Basic
 * authentication. Credentials never appear in messages.
 *
 * Errors are StreamErrors: an id the registry does not hold (404, error_code 40403) is
 * SCHEMA_UNKNOWN; no answer, a timeout, 5xx, 408, 429, 401/403 and answers that are not the
 * Confluent API (a 404 without a Confluent error body: a wrong base URL) are REGISTRY_UNAVAILABLE
 * (retriable: the record is not at fault); a schema the registry refuses (409 incompatible, 422
 * invalid) is SCHEMA_UNKNOWN — not retriable. Messages carry subjects, ids and the registry's
 * error codes, never record values.
 *
 * Plain fetch rather than @kafkajs/confluent-schema-registry: the port needs the raw schema text
 * (the library returns parsed avsc types), and the library retries and caches on its own and sets
 * the subject's compatibility level on first registration — behaviours the decorators
 * (retrying-registry.ts, caching-registry.ts) and the operator own here.
 */
export function confluentRegistry(at: string | RegistrySettings, options: ConfluentRegistryOptions = {}): SchemaRegistryPort {
  const settings = typeof at === 'string' ? urlSettings(at) : at;
  const base = settings.url.replace(/\/+$/, '');
  const parsed = new URL(base);
  const conn: Connection = {
    base,
    shown: `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`,
    headers: { accept: 'application/vnd.schemaregistry.v1+json, application/json', ...authorization(settings) },
    fetch: registryFetch(settings),
    timeoutMs: options.timeoutMs ?? 10_000,
  };
  return {
    async schemaById(id) {
      const what = `schema ${id}`;
      const { status, body } = await call(conn, what, `/schemas/ids/${encodeURIComponent(String(id))}`);
      if (status !== 200 || typeof body?.schema !== 'string') throw failure(conn, what, status, body, 40403);
      return body.schema;
    },
    async latestVersion(subject) {
      const what = `the latest version of subject ${subject}`;
      const { status, body } = await call(conn, what, `/subjects/${encodeURIComponent(subject)}/versions/latest`);
      if (status === 404 && (body?.error_code === 40401 || body?.error_code === 40402)) return undefined;
      if (status !== 200 || typeof body?.schema !== 'string' || typeof body.id !== 'number') throw failure(conn, what, status, body);
      const type = body.schemaType;
      return {
        id: body.id,
        version: typeof body.version === 'number' ? body.version : 0,
        schema: body.schema,
        schemaType: type === 'JSON' || type === 'PROTOBUF' ? type : 'AVRO',
      };
    },
    async register(subject, schema, schemaType = 'AVRO') {
      const what = `registering a schema under subject ${subject}`;
      const { status, body } = await call(conn, what, `/subjects/${encodeURIComponent(subject)}/versions`, {
        method: 'POST',
        body: JSON.stringify({ schemaType, schema }),
      });
      if (status !== 200 || typeof body?.id !== 'number' || !Number.isInteger(body.id)) throw failure(conn, what, status, body);
      return body.id;
    },
  };
}

/** one registry: its API base, how it is named in messages (no credentials), the headers and fetch every call uses */
interface Connection {
  base: string;
  shown: string;
  headers: Record<string, string>;
  fetch: typeof globalThis.fetch;
  timeoutMs: number;
}

/** one call: its status and JSON object body (undefined when the body is not one); no answer is REGISTRY_UNAVAILABLE */
async function call(
  conn: Connection,
  what: string,
  path: string,
  init: { method?: string; body?: string } = {},
): Promise<{ status: number; body: Record<string, unknown> | undefined }> {
  let res: Response;
  let text: string;
  try {
    res = await conn.fetch(`${conn.base}${path}`, {
      method: init.method ?? 'GET',
      headers: init.body === undefined ? conn.headers : { ...conn.headers, 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: init.body,
      signal: AbortSignal.timeout(conn.timeoutMs),
    });
    text = await res.text();
  } catch (e) {
    const timedOut = e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError');
    const reason = timedOut ? `no answer within ${conn.timeoutMs} ms` : describeNetworkError(e);
    throw new StreamError('REGISTRY_UNAVAILABLE', `schema registry ${conn.shown}: ${what}: ${reason}`, { cause: e });
  }
  let body: Record<string, unknown> | undefined;
  try {
    const json: unknown = JSON.parse(text);
    if (typeof json === 'object' && json !== null && !Array.isArray(json)) body = json as Record<string, unknown>;
  } catch {
    body = undefined;
  }
  return { status: res.status, body };
}

/** an answer that is not what was asked: SCHEMA_UNKNOWN (the id unknown, the schema refused) or REGISTRY_UNAVAILABLE (retriable) */
function failure(conn: Connection, what: string, status: number, body: Record<string, unknown> | undefined, unknownCode?: number): StreamError {
  const code = typeof body?.error_code === 'number' ? body.error_code : undefined;
  const said = typeof body?.message === 'string' ? `: ${body.message.slice(0, 300)}` : '';
  const answer = `HTTP ${status}${code !== undefined ? `, error_code ${code}` : ''}${said}`;
  if (unknownCode !== undefined && status === 404 && code === unknownCode)
    return new StreamError('SCHEMA_UNKNOWN', `schema registry ${conn.shown}: ${what}: not found (${answer})`);
  if (status >= 500 || status === 408 || status === 429 || status === 401 || status === 403 || (status === 404 && code === undefined) || status < 400) {
    const hint = status === 404 ? ' — is the URL the Confluent API base (Apicurio: …/apis/ccompat/v7)?' : '';
    return new StreamError('REGISTRY_UNAVAILABLE', `schema registry ${conn.shown}: ${what}: ${answer}${hint}`);
  }
  return new StreamError('SCHEMA_UNKNOWN', `schema registry ${conn.shown}: ${what}: refused (${answer})`);
}

/** A URL as settings: user:password in it is HTTP Basic (taken out of the URL, never shown). */
function urlSettings(url: string): RegistrySettings {
  const parsed = new URL(url);
  const user = decodeURIComponent(parsed.username);
  const password = decodeURIComponent(parsed.password);
  parsed.username = '';
  parsed.password = '';
  return { url: parsed.toString(), ...(user || password ? { auth: { kind: 'basic', user, password: new Secret(password) } } : {}) };
}

function authorization(settings: RegistrySettings): Record<string, string> {
  const { auth } = settings;
  if (!auth) return {};
  if (auth.kind === 'bearer') return { authorization: `Bearer ${auth.token.reveal()}` };
  return { authorization: `Basic ${Buffer.from(`${auth.user}:${auth.password.reveal()}`).toString('base64')}` };
}

/**
 * The fetch the registry is called with: Node's, or with TLS settings undici's (the library Node's
 * fetch is built on) over an Agent that presents the client certificate and trusts the CA bundle.
 */
function registryFetch(settings: RegistrySettings): typeof globalThis.fetch {
  const { tls } = settings;
  if (!tls) return globalThis.fetch;
  const dispatcher = new Agent({
    connect: {
      rejectUnauthorized: true,
      ...(tls.ca ? { ca: [tls.ca.pem] } : {}),
      ...(tls.certificate ? { cert: tls.certificate.pem } : {}),
      ...(tls.key ? { key: tls.key.pem } : {}),
      ...(tls.keyPassword ? { passphrase: tls.keyPassword.reveal() } : {}),
    },
  });
  return ((input: string, init: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher } as never)) as unknown as typeof globalThis.fetch;
}

function describeNetworkError(e: unknown): string {
  const cause = e instanceof Error ? (e.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (cause && typeof cause.code === 'string') return cause.code === 'ECONNREFUSED' ? 'connection refused' : cause.code;
  return e instanceof Error ? e.message : 'request failed';
}
