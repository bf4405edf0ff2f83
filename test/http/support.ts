// Shared helpers of the HTTP tests: calls over real HTTP (fetch), problem-details checks,
// configurations derived from config/example.yaml, and a signer holding the service's own
// token-signing key (to forge tokens that differ from a valid one in exactly one respect).
import { createPrivateKey, randomUUID, sign, type KeyObject } from 'node:crypto';
import { expect } from 'vitest';
import type { JWTPayload } from 'jose';
import { revealKeyBytes } from '../../src/engine/index.ts';
import { ERROR_CATALOG, type ErrorCode } from '../../src/errors/catalog.ts';
import { hashClientSecret } from '../../src/identity/client-secret.ts';
import { EXAMPLE_CONFIG_TEXT, body, type RequestSpec } from '../helpers/engine-fixture.ts';
import { startTestService, type TestService } from '../helpers/http-service.ts';

export { body, EXAMPLE_CONFIG_TEXT, type RequestSpec };

/**
 * Distinctive sample values of the example's Customer fields (each valid for its protect
 * sequence). Every one must stay out of logs, error bodies, metrics and audit events.
 */
/** A desk-agent client (role support) and a responder `desk` on the given topics, as configuration text to append. */
export async function deskResponderYaml(topics: { requests: string; replies: string; dlq: string; groupId: string }): Promise<string> {
  return `${await clientsYaml({ 'desk-agent': { secret: 'desk-agent-secret-0123456789', roles: ['support'] } })}
responders:
  desk:
    requestTopic: ${topics.requests}
    replyTopics: [${topics.replies}]
    deadLetterTopic: ${topics.dlq}
    groupId: ${topics.groupId}
`;
}

export const SECRET = {
  email: 'zz-secret-4111.ottilie@example.org',
  cardNumber: '4111-9817-3652-0046',
  nationalId: 'ZZSECRET4111Q',
  name: 'zz-secret-4111 Zéphyrine Quixote',
  segmentKey: 'zz-secret-4111-segment',
} as const;

export const REVERSIBLE = ['email', 'cardNumber', 'nationalId', 'name'] as const;

export interface Reply {
  res: Response;
  status: number;
  headers: Headers;
  text: string;
  /** the body parsed as JSON, or undefined when it is not JSON */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  requestId: string;
}

/** One HTTP call; the body is read once and kept as text and JSON. */
export async function call(url: string, init: RequestInit = {}): Promise<Reply> {
  const res = await fetch(url, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { res, status: res.status, headers: res.headers, text, json, requestId: res.headers.get('x-request-id') ?? '' };
}

/** POST /transform with a JSON body (a string is sent verbatim). */
export function transform(svc: TestService, token: string | undefined, payload: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return call(`${svc.url}/transform`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers },
    body: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
}

/** POST /connect/token, form-encoded. */
export function tokenRequest(svc: TestService, form: Record<string, string> | URLSearchParams, headers: Record<string, string> = {}): Promise<Reply> {
  return call(`${svc.url}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: form instanceof URLSearchParams ? form : new URLSearchParams(form),
  });
}

/**
 * Checks an RFC 9457 problem-details reply for `code`: media type, status from the catalog,
 * type/title/retriable/instance consistent, and, when there are details, `pointer` equal to the
 * first detail's pointer and every detail carrying code, pointer and message. Returns the body.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function expectProblem(reply: Reply, code: ErrorCode): any {
  const entry = ERROR_CATALOG[code];
  expect(reply.status, `${code}: ${reply.text}`).toBe(entry.status);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json\b/);
  const p = reply.json;
  expect(p, reply.text).toBeTypeOf('object');
  expect(p.code).toBe(code);
  expect(p.status).toBe(entry.status);
  expect(p.title).toBe(entry.title);
  expect(p.retriable).toBe(entry.retriable);
  expect(p.type).toBe(`urn:veil:error:${code.toLowerCase().replaceAll('_', '-')}`);
  expect(typeof p.detail).toBe('string');
  expect(reply.requestId).not.toBe('');
  expect(p.instance).toBe(`urn:veil:request:${reply.requestId}`);
  if (p.errors !== undefined) {
    expect(Array.isArray(p.errors)).toBe(true);
    expect(p.errors.length).toBeGreaterThan(0);
    expect(p.pointer).toBe(p.errors[0].pointer);
    for (const e of p.errors) {
      expect(typeof e.code).toBe('string');
      expect(e.code in ERROR_CATALOG).toBe(true);
      expect(typeof e.pointer).toBe('string');
      expect(typeof e.message).toBe('string');
    }
  } else {
    expect(p.pointer).toBeUndefined();
  }
  return p;
}

/** A problem whose errors[] lead with `code` at `pointer`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function expectProblemAt(reply: Reply, code: ErrorCode, pointer: string): any {
  const p = expectProblem(reply, code);
  expect(p.errors, reply.text).toBeDefined();
  expect(p.pointer).toBe(pointer);
  expect(p.errors[0].code).toBe(code);
  expect(p.errors[0].pointer).toBe(pointer);
  return p;
}

/** Fails when any of `texts` contains any of `secrets`. */
export function expectNoneContain(texts: readonly string[], secrets: readonly string[], what = 'text'): void {
  for (const secret of secrets) {
    if (!secret) continue;
    const hit = texts.find((t) => t.includes(secret));
    expect(hit, `${what} contains a secret (${secret.slice(0, 12)}…)`).toBeUndefined();
  }
}

/** The example configuration followed by extra top-level YAML sections. */
export function exampleWith(extraYaml: string): string {
  return `${EXAMPLE_CONFIG_TEXT.trimEnd()}\n\n${extraYaml.trim()}\n`;
}

/** YAML of an `identity.clients` section for clients given as id → { secret, roles }. */
export async function clientsYaml(clients: Record<string, { secret: string; roles: string[] }>): Promise<string> {
  const lines = ['identity:', '  clients:'];
  for (const [id, c] of Object.entries(clients)) {
    lines.push(`    ${id}:`, `      secretHash: '${await hashClientSecret(c.secret)}'`, `      roles: [${c.roles.join(', ')}]`);
  }
  return lines.join('\n');
}

/** Starts a service on the example configuration plus `extraYaml`. */
export function startWith(extraYaml: string): Promise<TestService> {
  return startTestService({ configText: exampleWith(extraYaml) });
}

export const SIGNING_KEY_ID = 'veil-token-signing';

// SEC1 ECPrivateKey for P-256 without the public point (as in src/keystore/jwt-signer.ts)
const SEC1_PREFIX = Buffer.from('30310201010420', 'hex');
const SEC1_SUFFIX = Buffer.from('a00a06082a8648ce3d030107', 'hex');

/** The service's own token-signing private key (primary version unless given) and its kid. */
export function serviceSigningKey(svc: TestService, version?: number): { key: KeyObject; kid: string } {
  const keystore = svc.service.keystore;
  const v = version ?? keystore.info(SIGNING_KEY_ID)!.primary;
  const secret = keystore.key(SIGNING_KEY_ID, v)!;
  const key = createPrivateKey({ key: Buffer.concat([SEC1_PREFIX, revealKeyBytes(secret), SEC1_SUFFIX]), format: 'der', type: 'sec1' });
  return { key, kid: `${SIGNING_KEY_ID}.v${v}` };
}

/** The claims veil puts into an access token of the dev client, at the service's clock. */
export function validClaims(svc: TestService, overrides: Record<string, unknown> = {}): JWTPayload {
  const iat = Math.floor(svc.clock.now.getTime() / 1000);
  return {
    iss: svc.service.issuer,
    sub: 'veil-dev',
    aud: 'veil',
    iat,
    nbf: iat,
    exp: iat + 900,
    jti: randomUUID(),
    client_id: 'veil-dev',
    roles: ['ingest', 'support', 'fraud'],
    ...overrides,
  };
}

/**
 * A token signed (ES256) with the service's own key. `claims` replace the valid claims
 * (undefined deletes one); `header` replaces parameters of {alg ES256, typ at+jwt, kid}. Signed
 * by hand, so any header (an unknown `crit`, a lying `alg`) can be produced.
 */
export async function forge(svc: TestService, options: { claims?: Record<string, unknown>; header?: Record<string, unknown> } = {}): Promise<string> {
  const { key, kid } = serviceSigningKey(svc);
  const claims: Record<string, unknown> = validClaims(svc, options.claims);
  for (const [k, v] of Object.entries(claims)) if (v === undefined) delete claims[k];
  const header: Record<string, unknown> = { alg: 'ES256', typ: 'at+jwt', kid, ...options.header };
  for (const [k, v] of Object.entries(header)) if (v === undefined) delete header[k];
  const input = `${base64urlJson(header)}.${base64urlJson(claims)}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

export function base64urlJson(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** A transform body that protects one email for role fraud: the positive control of auth tests. */
export function protectEmailBody(value: string = SECRET.email): ReturnType<typeof body> {
  return body({ roles: ['fraud'], action: 'Protect', instances: [['email', value]] });
}

export interface TrickleOptions {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  /** the body, sent `bytesPerTick` bytes every `tickMs` (the default sends it at once) */
  body?: string;
  bytesPerTick?: number;
  tickMs?: number;
  /** stop sending after this many bytes of the body, and keep the connection open */
  stopAfter?: number;
  /** fail when no full response has arrived after this long */
  giveUpMs?: number;
}

/**
 * One request over a raw socket whose body trickles in: what fetch cannot send slowly. Resolves
 * with the reply (parsed as `call` does), when it arrived, and whether the server then closed the
 * connection (within `closeWaitMs`).
 */
export async function trickle(
  url: string,
  options: TrickleOptions,
  closeWaitMs = 2000,
): Promise<{ reply: Reply; elapsedMs: number; sentBytes: number; closedByServer: boolean }> {
  const { connect } = await import('node:net');
  const { port, hostname } = new URL(url);
  const body = Buffer.from(options.body ?? '');
  const chunked = options.headers?.['transfer-encoding'] !== undefined;
  const headers = { host: `${hostname}:${port}`, ...(chunked ? {} : { 'content-length': String(body.length) }), ...options.headers };
  const head = `${options.method ?? 'POST'} ${options.path} HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
  const started = Date.now();
  const socket = connect(Number(port), hostname);
  let received = Buffer.alloc(0);
  let sent = 0;
  let ticker: NodeJS.Timeout | undefined;
  let elapsedMs = 0;
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const responded = new Promise<void>((resolve, reject) => {
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)/i.exec(received.subarray(0, end).toString('latin1'));
      if (end >= 0 && length && received.length >= end + 4 + Number(length[1])) {
        elapsedMs = Date.now() - started;
        resolve();
      }
    });
    socket.once('error', reject);
    socket.once('close', () => reject(new Error(`connection closed before a full response (${received.length} bytes)`)));
    if (options.giveUpMs) setTimeout(() => reject(new Error(`no response within ${options.giveUpMs} ms`)), options.giveUpMs).unref();
  });
  socket.once('connect', () => {
    socket.write(head);
    const limit = Math.min(body.length, options.stopAfter ?? body.length);
    const step = options.bytesPerTick ?? body.length;
    const tick = () => {
      if (sent >= limit || socket.destroyed) return clearInterval(ticker);
      const chunk = body.subarray(sent, Math.min(limit, sent + step));
      sent += chunk.length;
      socket.write(chunk, () => undefined);
    };
    tick();
    if (options.tickMs) ticker = setInterval(tick, options.tickMs);
  });
  try {
    await responded;
  } catch (e) {
    socket.destroy();
    throw e;
  } finally {
    clearInterval(ticker);
  }
  const closedByServer = await Promise.race([closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), closeWaitMs))]);
  socket.destroy();
  const end = received.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(statusLine!.split(' ')[1]);
  const responseHeaders = new Headers(lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()] as [string, string]));
  const text = received.subarray(end + 4).toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const res = new Response(text, { status, headers: responseHeaders });
  return {
    reply: { res, status, headers: responseHeaders, text, json, requestId: responseHeaders.get('x-request-id') ?? '' },
    elapsedMs,
    sentBytes: sent,
    closedByServer,
  };
}
