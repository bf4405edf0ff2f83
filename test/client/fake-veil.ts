import { VeilClient, type FetchLike, type VeilClientOptions } from '../../src/client/index.ts';

/** A scripted stand-in for veil's HTTP API, for the client's pure logic (no sockets). */
export interface FakeCall {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface FakeVeil {
  fetch: FetchLike;
  calls: FakeCall[];
  transformCalls(): FakeCall[];
  tokenCalls(): FakeCall[];
  /** answers the next calls to `path` with these, before the normal behaviour */
  script(path: '/transform' | '/connect/token', ...answers: (() => Response)[]): void;
  /** tokens issued so far, in order */
  issued: string[];
  expiresIn: number;
  /** the tokens /transform accepts (default: every issued one) */
  revoked: Set<string>;
}

export const protectedOf = (value: string) => `P.${Buffer.from(value).toString('base64url')}`;

export function problem(status: number, code: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): () => Response {
  return () =>
    new Response(JSON.stringify({ type: `urn:veil:error:${code}`, title: `title of ${code}`, status, detail: 'a detail', code, ...extra }), {
      status,
      headers: { 'content-type': 'application/problem+json', 'x-request-id': 'req-1', ...headers },
    });
}

export function fakeVeil(): FakeVeil {
  const calls: FakeCall[] = [];
  const scripts = new Map<string, (() => Response)[]>();
  const fake: FakeVeil = {
    calls,
    issued: [],
    expiresIn: 300,
    revoked: new Set(),
    transformCalls: () => calls.filter((c) => c.url.endsWith('/transform')),
    tokenCalls: () => calls.filter((c) => c.url.endsWith('/connect/token')),
    script(path, ...answers) {
      scripts.set(path, [...(scripts.get(path) ?? []), ...answers]);
    },
    async fetch(url, init) {
      const headers = Object.fromEntries(Object.entries(init.headers as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
      const body = String(init.body);
      calls.push({ url, headers, body });
      const path = new URL(url).pathname;
      const scripted = scripts.get(path)?.shift();
      if (scripted) return scripted();
      if (path === '/connect/token') {
        const token = `token-${fake.issued.length + 1}`;
        fake.issued.push(token);
        return Response.json({ access_token: token, token_type: 'Bearer', expires_in: fake.expiresIn });
      }
      const token = headers.authorization?.replace(/^Bearer /, '') ?? '';
      if (!fake.issued.includes(token) || fake.revoked.has(token)) return problem(401, 'TOKEN_EXPIRED')();
      const request = JSON.parse(body) as {
        processingContexts: { guid: string; evidences: { value: string }[] }[];
        requests: { guid: string; processingContext: string; instances: { className: string; propertyName: string; value: string }[] }[];
      };
      const action = new Map(request.processingContexts.map((c) => [c.guid, c.evidences[0]!.value]));
      return Response.json({
        responses: request.requests.map((r) => ({
          request: r.guid,
          instances: r.instances.map((i) => ({
            ...i,
            value: action.get(r.processingContext) === 'Protect' ? protectedOf(i.value) : Buffer.from(i.value.slice(2), 'base64url').toString(),
          })),
        })),
      });
    },
  };
  return fake;
}

/** A clock whose sleeps advance it at once, recording each wait. */
export function fakeClock(start = 1_000_000): { now(): number; sleep(ms: number): Promise<void>; sleeps: number[]; advance(ms: number): void } {
  let now = start;
  const clock = {
    sleeps: [] as number[],
    now: () => now,
    async sleep(ms: number) {
      clock.sleeps.push(ms);
      now += ms;
    },
    advance(ms: number) {
      now += ms;
    },
  };
  return clock;
}

/** A VeilClient (client app, secret s) over a fresh fake veil and a fake clock; `options` override those. */
export function fakeVeilClient(options: Partial<VeilClientOptions> = {}): { fake: FakeVeil; client: VeilClient } {
  const fake = fakeVeil();
  const client = new VeilClient({
    url: 'http://veil.test',
    clientId: 'app',
    clientSecret: 's',
    fetch: (url, init) => fake.fetch(url, init),
    clock: fakeClock(),
    ...options,
  });
  return { fake, client };
}
