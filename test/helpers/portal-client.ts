// Shared helpers of the portal tests: a service on the example configuration with one client per
// admin right, and a signed-in HTTP client (cookie + CSRF token) over real HTTP.
import { hashClientSecret } from '../../src/identity/client-secret.ts';
import { EXAMPLE_CONFIG_TEXT } from './engine-fixture.ts';
import { startTestService, type TestService } from './http-service.ts';

/** Clients of the portal tests: id → roles; each secret is `<id>-secret`. */
export const PORTAL_CLIENTS = {
  viewer: ['admin-viewer'],
  editor: ['admin-editor'],
  publisher: ['admin-publisher'],
  tester: ['admin-tester', 'support'],
  'no-admin': ['support'],
} as const;

export type PortalClientId = keyof typeof PORTAL_CLIENTS;

/** The example configuration plus the portal test clients (cheap scrypt parameters). */
export async function portalConfigText(extra = ''): Promise<string> {
  const lines = ['identity:', '  clients:'];
  for (const [id, roles] of Object.entries(PORTAL_CLIENTS)) {
    const hash = await hashClientSecret(`${id}-secret`, { N: 1024, r: 8, p: 1 });
    lines.push(`    ${id}: { secretHash: '${hash}', roles: [${roles.join(', ')}] }`);
  }
  return `${EXAMPLE_CONFIG_TEXT}\n${lines.join('\n')}\n${extra}`;
}

/** `extra`: more configuration text, e.g. a `pipelines:` section. */
export async function startPortalService(options: { dataDir?: string; extra?: string } = {}): Promise<TestService> {
  const { extra, ...rest } = options;
  return startTestService({ configText: await portalConfigText(extra), ...rest });
}

export interface PortalClient {
  cookie: string;
  csrf: string;
  get(path: string): Promise<{ status: number; location: string | null; text: string; headers: Headers }>;
  post(
    path: string,
    form: Record<string, string>,
    options?: { csrf?: boolean },
  ): Promise<{ status: number; location: string | null; text: string; headers: Headers }>;
  /** reviews a draft (reads its page, which carries the hash of the text shown) and publishes what it reviewed */
  publish(draftId: string): Promise<{ status: number; location: string | null; text: string; headers: Headers }>;
}

/** The hash of the reviewed text in a draft page's publish form. */
export const reviewedHash = (draftPage: string) => /name="reviewed" value="([0-9a-f]{64})"/.exec(draftPage)?.[1];

async function send(url: string, init: RequestInit) {
  const res = await fetch(url, { ...init, redirect: 'manual' });
  return { status: res.status, location: res.headers.get('location'), text: await res.text(), headers: res.headers };
}

/** Signs in with a client's credentials; the client then carries the session cookie and CSRF token. */
export async function signIn(url: string, clientId: string, secret = `${clientId}-secret`): Promise<PortalClient> {
  const res = await send(`${url}/admin/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ kind: 'client', client_id: clientId, client_secret: secret }).toString(),
  });
  if (res.status !== 303) throw new Error(`sign-in of ${clientId} failed: ${res.status}`);
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
  const page = await send(`${url}/admin`, { headers: { cookie } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
  const client: PortalClient = {
    cookie,
    csrf,
    get: (path) => send(`${url}${path}`, { headers: { cookie } }),
    post: (path, form, options = {}) =>
      send(`${url}${path}`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ ...(options.csrf === false ? {} : { _csrf: csrf }), ...form }).toString(),
      }),
    publish: async (draftId) => {
      const reviewed = reviewedHash((await client.get(`/admin/drafts/${draftId}`)).text) ?? '';
      return client.post(`/admin/drafts/${draftId}/publish`, { reviewed });
    },
  };
  return client;
}
