// Attack (issue 43): a signed-in admin's cookie and CSRF token sent from another origin. Every
// POST route of the portal must refuse it (403 CROSS_ORIGIN_REFUSED) and change nothing; the
// header variants a browser, a proxy or a forger may send are tried as raw requests on one route.
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../../helpers/http-service.ts';
import { signIn, startPortalService, type PortalClient } from '../../helpers/portal-client.ts';

let t: TestService;
let port: number;
let admin: PortalClient;
let draft: string;

beforeAll(async () => {
  t = await startPortalService();
  port = Number(new URL(t.url).port);
  admin = await signIn(t.url, 'veil-dev', t.service.devClient!.secret);
  draft = /\/admin\/drafts\/([0-9a-f-]{36})/.exec((await admin.post('/admin/drafts', { from: 'v1' })).location ?? '')![1]!;
}, 60_000);
afterAll(async () => t?.close());

/** One POST on a fresh connection with exactly these headers (a list: a header may repeat), the session's cookie added. */
function post(path: string, headers: string[], form: Record<string, string>): Promise<{ status: number; text: string }> {
  const body = new URLSearchParams({ _csrf: admin.csrf, ...form }).toString();
  const list = headers.some((h, i) => i % 2 === 0 && h.toLowerCase() === 'host') ? headers : ['Host', `127.0.0.1:${port}`, ...headers];
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        hostname: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: false,
        headers: [...list, 'Cookie', admin.cookie, 'Content-Type', 'application/x-www-form-urlencoded', 'Content-Length', String(Buffer.byteLength(body))],
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += String(d)));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** What a change would show: versions, drafts and their text, key versions, audit records of success. */
async function state() {
  return {
    versions: t.service.versions.versions().length,
    drafts: (await t.service.versions.drafts()).map((d) => d.id),
    draftText: await t.service.versions.draftText(draft),
    keys: t.service.keystore.list().map((k) => `${k.id}:${k.primary}`),
    ok: t.audit.events.filter((e) => e.outcome === 'ok').length,
  };
}

/** A route's path with its parameters: the draft made above, a key of the configuration, version 1. */
const pathOf = (route: string) => route.replace('/keys/:id', '/keys/customer-siv').replace(':id', draft).replace(':n', '1');

/** Every POST route of the portal with a form that, same-origin, would change something. */
const ROUTES: [string, () => Record<string, string>][] = [
  ['/admin/sign-out', () => ({})],
  ['/admin/subjects', () => ({ op: 'erase', subject: 'route-table@example.org', reason: 'r', confirm: 'yes' })],
  ['/admin/keys/:id/rotate', () => ({})],
  ['/admin/pipelines/draft', () => ({ pipeline: 'none' })],
  ['/admin/versions/:n/revert', () => ({})],
  ['/admin/drafts', () => ({ from: 'v1' })],
  ['/admin/drafts/:id/fields', () => ({})],
  ['/admin/drafts/:id/yaml', () => ({ yaml: 'version: 1\n' })],
  ['/admin/drafts/:id/tests', () => ({ field: 'Customer.email', role: 'support', action: 'Protect', value: 'a@example.org', expect: 'changed' })],
  ['/admin/drafts/:id/tests/delete', () => ({ index: '0' })],
  ['/admin/drafts/:id/delete', () => ({})],
  ['/admin/drafts/:id/publish', () => ({ reviewed: '0'.repeat(64) })],
  ['/admin/tester', () => ({ source: 'active' })],
  ['/admin/discover', () => ({ records: '{"email":"a@example.org"}' })],
  ['/admin/discover/draft', () => ({ rows: '[]' })],
];

describe('every POST route of the portal, from another origin', () => {
  it('the table names every POST route the portal registers (src/portal/routes)', () => {
    const dir = new URL('../../../src/portal/routes/', import.meta.url);
    const registered = readdirSync(dir).flatMap((file) => {
      const text = readFileSync(new URL(file, dir), 'utf8');
      return [...[...text.matchAll(/app\.post\('([^']+)'/g)].map((m) => m[1]!), ...[...text.matchAll(/\bsave\('([a-z]+)'/g)].map((m) => `/drafts/:id/${m[1]}`)];
    });
    expect(registered.map((p) => `/admin${p}`).sort()).toEqual([...ROUTES.map(([p]) => p), '/admin/sign-in'].sort());
  });

  it.each(ROUTES)('%s with a valid cookie and CSRF token, Origin: http://evil.example: 403 CROSS_ORIGIN_REFUSED, nothing changed', async (route, form) => {
    const before = await state();
    const res = await post(pathOf(route), ['Origin', 'http://evil.example'], form());
    expect(res.status).toBe(403);
    expect(res.text).toContain('CROSS_ORIGIN_REFUSED');
    expect(await state()).toEqual(before);
    expect((await t.service.subjects.status('route-table@example.org')).state).toBe('unknown');
    // the session was not ended either
    expect((await admin.get('/admin')).status).toBe(200);
  });

  it('sign-in from another origin: its page with CROSS_ORIGIN_REFUSED, no session', async () => {
    const res = await post('/admin/sign-in', ['Origin', 'http://evil.example'], {
      kind: 'client',
      client_id: 'veil-dev',
      client_secret: t.service.devClient!.secret,
    });
    expect(res.status).toBe(403);
    expect(res.text).toContain('CROSS_ORIGIN_REFUSED');
  });
});

describe('the header variants, on the erase form', () => {
  const own = () => `http://127.0.0.1:${port}`;
  let n = 0;
  /** Erases a fresh subject with these headers: whether it was erased, and the answer. */
  async function erase(headers: string[]): Promise<{ erased: boolean; status: number; text: string }> {
    const subject = `variant-${++n}@example.org`;
    await t.service.subjects.keyFor(subject);
    const res = await post('/admin/subjects', headers, { op: 'erase', subject, reason: 'variant', confirm: 'yes' });
    return { erased: (await t.service.subjects.status(subject)).state === 'erased', ...res };
  }

  it.each([
    ["Origin: the portal's own", () => ['Origin', own()]],
    ['Origin in upper case (scheme and host compare case-insensitively)', () => ['Origin', own().toUpperCase()]],
    ['Host and Origin naming the host in another case', () => ['Host', `LOCALHOST:${port}`, 'Origin', `http://localhost:${port}`]],
    ['Origin and Sec-Fetch-Site: same-origin', () => ['Origin', own(), 'Sec-Fetch-Site', 'same-origin']],
    ['no Origin, Sec-Fetch-Site: same-origin', () => ['Sec-Fetch-Site', 'same-origin']],
    ['no Origin, Sec-Fetch-Site: none (the admin typed it)', () => ['Sec-Fetch-Site', 'none']],
    ['neither header (not a browser)', () => []],
  ])('accepted: %s', async (_label, headers) => {
    const res = await erase(headers());
    expect([res.status, res.erased]).toEqual([200, true]);
  });

  it.each([
    ['Origin: http://evil.example', () => ['Origin', 'http://evil.example']],
    ['Origin: null', () => ['Origin', 'null']],
    ['Origin with a path', () => ['Origin', `${own()}/admin/subjects`]],
    ['Origin with a trailing slash', () => ['Origin', `${own()}/`]],
    ['Origin with user info', () => ['Origin', `http://admin@127.0.0.1:${port}`]],
    ['Origin on another port', () => ['Origin', `http://127.0.0.1:${port + 1}`]],
    ['Origin without the port', () => ['Origin', 'http://127.0.0.1']],
    ['Origin with another scheme', () => ['Origin', `https://127.0.0.1:${port}`]],
    ['Origin with another host name for the same address', () => ['Origin', `http://localhost:${port}`]],
    ['Origin that is not a URL', () => ['Origin', 'evil']],
    ["two Origin headers, both the portal's", () => ['Origin', own(), 'Origin', own()]],
    ['no Origin, Sec-Fetch-Site: same-site (another port or subdomain)', () => ['Sec-Fetch-Site', 'same-site']],
    ['no Origin, Sec-Fetch-Site: cross-site', () => ['Sec-Fetch-Site', 'cross-site']],
    ['no Origin, Sec-Fetch-Site in another case', () => ['Sec-Fetch-Site', 'Same-Origin']],
    ["Origin the portal's, Sec-Fetch-Site: cross-site", () => ['Origin', own(), 'Sec-Fetch-Site', 'cross-site']],
    ['Sec-Fetch-Site: same-origin, Origin another', () => ['Origin', 'http://evil.example', 'Sec-Fetch-Site', 'same-origin']],
  ])('refused: %s: 403 CROSS_ORIGIN_REFUSED, not erased', async (_label, headers) => {
    const res = await erase(headers());
    expect([res.status, res.erased]).toEqual([403, false]);
    expect(res.text).toContain('CROSS_ORIGIN_REFUSED');
    // the page never quotes the header it refused
    expect(res.text).not.toContain('evil');
  });
});
