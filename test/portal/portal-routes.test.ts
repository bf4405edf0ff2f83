import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/http-service.ts';
import { signIn, startPortalService, type PortalClient } from '../helpers/portal-client.ts';

type Right = 'viewer' | 'editor' | 'publisher' | 'tester';

/** Every admin route with the right it needs; `:id` is a draft. */
const ROUTES: [method: 'GET' | 'POST', path: string, right: Right, form?: Record<string, string>][] = [
  ['GET', '/admin', 'viewer'],
  ['GET', '/admin/versions', 'viewer'],
  ['GET', '/admin/versions/1', 'viewer'],
  ['GET', '/admin/versions/1/export', 'viewer'],
  ['POST', '/admin/versions/1/revert', 'publisher'],
  ['GET', '/admin/diff', 'viewer'],
  ['POST', '/admin/drafts', 'editor', { from: 'v1' }],
  ['GET', '/admin/drafts/:id', 'viewer'],
  ['GET', '/admin/drafts/:id/export', 'viewer'],
  ['POST', '/admin/drafts/:id/fields', 'editor'],
  ['POST', '/admin/drafts/:id/yaml', 'editor', { yaml: 'version: 1' }],
  ['POST', '/admin/drafts/:id/tests', 'editor'],
  ['POST', '/admin/drafts/:id/tests/delete', 'editor'],
  ['POST', '/admin/drafts/:id/delete', 'editor'],
  ['POST', '/admin/drafts/:id/publish', 'publisher'],
  ['GET', '/admin/tester', 'viewer'],
  [
    'POST',
    '/admin/tester',
    'viewer',
    { source: 'v1', className: 'Customer', role: 'support', action: 'Unprotect', keys: 'sandbox', 'value:email': 'a@example.org' },
  ],
  [
    'POST',
    '/admin/tester',
    'tester',
    { source: 'v1', className: 'Customer', role: 'support', action: 'Unprotect', keys: 'live', 'value:email': 'a@example.org' },
  ],
  ['GET', '/admin/keys', 'viewer'],
  ['POST', '/admin/keys/customer-siv/rotate', 'publisher'],
  ['GET', '/admin/matrix', 'viewer'],
  ['GET', '/admin/pipelines', 'viewer'],
  ['POST', '/admin/pipelines/draft', 'editor', { pipeline: 'customers', finding: 'contact.email\temail\t1' }],
  ['GET', '/admin/discover', 'editor'],
  ['POST', '/admin/discover', 'editor', { records: '{"email":"a@example.org"}' }],
  ['POST', '/admin/discover/draft', 'editor', { finding: 'email\temail\t1\t1' }],
  ['GET', '/admin/audit', 'viewer'],
  ['GET', '/admin/subjects', 'viewer'],
  ['POST', '/admin/subjects', 'viewer', { op: 'status', subject: 'someone' }],
  ['POST', '/admin/subjects', 'publisher', { op: 'erase', subject: 'someone', reason: 'r', confirm: 'yes' }],
  ['POST', '/admin/sign-out', 'viewer'],
];

/** A signed-in admin lacking the right: viewer lacks editor, publisher and tester. */
const LACKING: Record<Exclude<Right, 'viewer'>, 'viewer' | 'editor'> = { editor: 'viewer', publisher: 'editor', tester: 'viewer' };

let t: TestService;
let draft: string;
const clients: Partial<Record<string, PortalClient>> = {};

beforeAll(async () => {
  t = await startPortalService();
  for (const id of ['viewer', 'editor', 'publisher']) clients[id] = await signIn(t.url, id);
  const created = await clients.editor!.post('/admin/drafts', { from: 'v1' });
  draft = /\/admin\/drafts\/([0-9a-f-]{36})/.exec(created.location!)![1]!;
});
afterAll(async () => t?.close());

const pathOf = (p: string) => p.replace(':id', draft);

describe('admin route authorization', () => {
  it('lists every admin route the service registers', () => {
    const registered = new Set<string>();
    // printRoutes draws a tree: each line's segment continues the path of the nearest line above it that is less indented
    const stack: { depth: number; path: string }[] = [];
    for (const line of t.service.app.printRoutes({ commonPrefix: false }).split('\n')) {
      const m = /── (\S+) \(([A-Z, ]+)\)/.exec(line);
      if (!m) continue;
      const depth = line.indexOf('── ');
      while (stack.length && stack[stack.length - 1]!.depth >= depth) stack.pop();
      const path = `${stack[stack.length - 1]?.path ?? ''}${m[1]}`;
      stack.push({ depth, path });
      if (path.startsWith('/admin')) for (const method of m[2]!.split(', ')) if (method !== 'HEAD') registered.add(`${method} ${path}`);
    }
    expect(registered.size).toBeGreaterThan(20);
    const known = new Set(ROUTES.map(([m, p]) => `${m} ${p.replace('/versions/1', '/versions/:n').replace('/keys/customer-siv', '/keys/:id')}`));
    const open = ['GET /admin/sign-in', 'POST /admin/sign-in', 'GET /admin/static/:file', 'GET /admin/'];
    // the admin API of data subjects: bearer tokens, not sessions (test/security/subjects/admin-subjects-api.test.ts)
    open.push('POST /admin/subjects/erase', 'POST /admin/subjects/erase-batch', 'POST /admin/subjects/status');
    expect([...registered].filter((r) => !known.has(r) && !open.includes(r))).toEqual([]);
  });

  it.each(ROUTES)('%s %s without a session: 303 to sign-in', async (method, path, _right, form) => {
    const res = await fetch(`${t.url}${pathOf(path)}`, {
      method,
      redirect: 'manual',
      ...(method === 'POST' ? { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form ?? {}).toString() } : {}),
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toMatch(/^\/admin\/sign-in/);
  });

  it.each(ROUTES.filter(([, , right]) => right !== 'viewer'))('%s %s with a session lacking %s: 403', async (method, path, right, form) => {
    const client = clients[LACKING[right as Exclude<Right, 'viewer'>]]!;
    const res = method === 'GET' ? await client.get(pathOf(path)) : await client.post(pathOf(path), form ?? {});
    expect(res.status).toBe(403);
    expect(res.text).toContain('ADMIN_ROLE_MISSING');
  });

  it.each(ROUTES.filter(([method, , right]) => method === 'GET' && right === 'viewer'))('%s %s for a viewer: 200', async (_method, path) => {
    const res = await clients.viewer!.get(pathOf(path));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('an identity without an admin role cannot sign in (403), and gets no session cookie', async () => {
    const res = await fetch(`${t.url}/admin/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ kind: 'client', client_id: 'no-admin', client_secret: 'no-admin-secret' }).toString(),
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('set-cookie')).toBeNull();
  });

  it('signs in with a token veil trusts (here one of its own), and refuses a forged one', async () => {
    const form = (token: string) => ({
      method: 'POST',
      redirect: 'manual' as const,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ kind: 'token', token }).toString(),
    });
    const ok = await fetch(`${t.url}/admin/sign-in`, form(await t.token()));
    expect(ok.status).toBe(303);
    expect(ok.headers.get('set-cookie')).toMatch(/^veil_admin=/);
    const token = await t.token();
    const forged = await fetch(`${t.url}/admin/sign-in`, form(`${token.slice(0, -4)}AAAA`));
    expect(forged.status).toBe(401);
    expect(forged.headers.get('set-cookie')).toBeNull();
  });

  it('a wrong secret is refused and audited as a denied sign-in without the secret', async () => {
    const res = await fetch(`${t.url}/admin/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ kind: 'client', client_id: 'viewer', client_secret: 'zz-wrong-secret-77' }).toString(),
    });
    expect(res.status).toBe(401);
    const denied = t.audit.events.filter((e) => e.admin?.action === 'sign-in' && e.outcome === 'denied');
    expect(denied.length).toBeGreaterThan(0);
    expect(JSON.stringify(t.audit.events)).not.toContain('zz-wrong-secret-77');
  });

  it('a POST with a session but without or with a wrong CSRF token: 403 CSRF_TOKEN_INVALID', async () => {
    const editor = clients.editor!;
    const without = await editor.post('/admin/drafts', { from: 'v1' }, { csrf: false });
    expect(without.status).toBe(403);
    expect(without.text).toContain('CSRF_TOKEN_INVALID');
    const wrong = await editor.post('/admin/drafts', { from: 'v1', _csrf: 'x'.repeat(43) }, { csrf: false });
    expect(wrong.status).toBe(403);
  });

  it('the session cookie is HttpOnly, SameSite=Strict, scoped to /admin, and short-lived', async () => {
    const res = await fetch(`${t.url}/admin/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ kind: 'client', client_id: 'viewer', client_secret: 'viewer-secret' }).toString(),
    });
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Path=\/admin/);
    expect(Number(/Max-Age=(\d+)/.exec(cookie)![1])).toBeLessThanOrEqual(30 * 60);
  });

  it('a session ends when its token expires', async () => {
    const viewer = await signIn(t.url, 'viewer');
    expect((await viewer.get('/admin')).status).toBe(200);
    t.clock.advance(16 * 60);
    const res = await viewer.get('/admin');
    expect(res.status).toBe(303);
    t.clock.advance(-16 * 60);
  });
});
