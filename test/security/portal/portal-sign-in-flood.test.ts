// Attack: an unauthenticated caller floods the portal's sign-in with wrong secrets, to lock the
// disk (every failure used to be an audit record, unlimited) and with it every unprotect. Against
// `veil serve` as a process: 429 after the limits, the audit log's growth bounded in records and
// bytes, the log rotated within its bound, the Audit page paged from the end, and every file veil
// wrote in its data dir private to it.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { body } from '../../helpers/engine-fixture.ts';
import { portalConfigText, reviewedHash } from '../../helpers/portal-client.ts';
import { draftIdOf, portalSession, startVeilServe, type PortalSession, type VeilProcess } from '../../helpers/veil-process.ts';

const ROTATE = 65_536;
let veil: VeilProcess;
let viewer: PortalSession;

const auditFiles = async () => (await readdir(veil.dataDir)).filter((f) => /^audit\.log(\.\d+)?$/.test(f)).sort();
async function auditRecords(): Promise<{ admin?: { action: string; target?: string }; outcome: string; time: string }[]> {
  const lines: string[] = [];
  for (const f of await auditFiles()) lines.push(...(await readFile(join(veil.dataDir, f), 'utf8')).split('\n').filter(Boolean));
  return lines.map((l) => JSON.parse(l));
}
const signInFailures = async () => (await auditRecords()).filter((e) => e.admin?.action === 'sign-in' && e.outcome === 'denied');
const signIn = (fields: Record<string, string>) =>
  veil.request('/admin/sign-in', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
const wrong = (clientId: string) => signIn({ kind: 'client', client_id: clientId, client_secret: 'not-the-secret' });

beforeAll(async () => {
  veil = await startVeilServe({
    configText: await portalConfigText(
      `portal:\n  signInFailuresPerMinute: 5\nservice:\n  rateLimit: { tokenFailuresPerMinute: 1000 }\n  audit: { rotateBytes: ${ROTATE}, keepFiles: 2 }\n`,
    ),
  });
  viewer = await portalSession(veil, 'viewer');
  // a published version, so the data dir holds one of each kind of file
  const admin = await portalSession(veil, 'veil-dev', (await readFile(join(veil.dataDir, 'dev-client.secret'), 'utf8')).trim());
  const id = draftIdOf(await admin.post('/admin/drafts', { from: 'v1' }))!;
  expect((await admin.post(`/admin/drafts/${id}/publish`, { reviewed: reviewedHash((await admin.get(`/admin/drafts/${id}`)).text)! })).status).toBe(303);
  await admin.post('/admin/drafts', { from: 'v2' });
}, 120_000);
afterAll(async () => veil?.stop());

describe('failed sign-ins are rate-limited and their audit bounded', () => {
  it('answers 429 SIGN_IN_RATE_LIMITED with Retry-After after 5 failures of one client id, even for its right secret', async () => {
    for (let i = 0; i < 5; i++) expect((await wrong('editor')).status).toBe(401);
    const limited = await wrong('editor');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.text).toContain('SIGN_IN_RATE_LIMITED');
    expect((await signIn({ kind: 'client', client_id: 'editor', client_secret: 'editor-secret' })).status).toBe(429);
    expect(await signInFailures()).toHaveLength(6); // 5 failures and the first refusal
  });

  it('answers 429 after 50 failures from one address whatever the client id or kind; a flood adds records only at the refill rate', async () => {
    // the per-address bucket holds 50 and refills at 50 a minute: the first 429 comes after 45 to a few more failures
    let failures = 0;
    while (failures < 60 && (await wrong(`guess-${failures}`)).status === 401) failures++;
    expect(failures).toBeGreaterThanOrEqual(45);
    expect(failures).toBeLessThanOrEqual(50);
    expect((await signIn({ kind: 'token', token: 'eyJhbGciOiJub25lIn0.e30.' })).status).toBe(429);
    const before = await auditRecords();
    const started = Date.now();
    const flood = await Promise.all(
      Array.from({ length: 400 }, (_, i) => (i % 2 ? wrong(`x${'y'.repeat(i)}`) : signIn({ kind: 'token', token: 'x'.repeat(5000) }))),
    );
    const seconds = (Date.now() - started) / 1000;
    const after = await auditRecords();
    // what refilled during the flood may be tried (and audited); everything else is refused unrecorded
    const allowed = Math.ceil((seconds * 50) / 60) + 1;
    expect(flood.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(400 - allowed);
    expect(flood.every((r) => r.status === 429 || r.status === 401)).toBe(true);
    expect(after.length - before.length).toBeLessThanOrEqual(allowed);
    const bytes = after.slice(before.length).reduce((n, e) => n + JSON.stringify(e).length + 1, 0);
    expect(bytes).toBeLessThanOrEqual(allowed * 400);
    // never the attacker's input
    expect(JSON.stringify(after)).not.toContain('guess-');
    expect(JSON.stringify(after)).not.toContain('not-the-secret');
    expect(JSON.stringify(after)).not.toContain('xxxxxxxx');
  });
});

describe('the audit log rotates, and the Audit page pages from the end', () => {
  it(`keeps audit.log, .1 and .2 under ${ROTATE} bytes each however many calls are audited`, async () => {
    const secret = (await readFile(join(veil.dataDir, 'dev-client.secret'), 'utf8')).trim();
    const token = (
      JSON.parse(
        (
          await veil.request('/connect/token', {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }).toString(),
          })
        ).text,
      ) as { access_token: string }
    ).access_token;
    const call = () =>
      veil.request('/transform', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body({ roles: ['fraud'], action: 'Unprotect', instances: [['email', 'not-a-protected-value']] })),
      });
    for (let round = 0; round < 50; round++) await Promise.all(Array.from({ length: 20 }, call));
    expect(await auditFiles()).toEqual(['audit.log', 'audit.log.1', 'audit.log.2']);
    for (const f of await auditFiles()) expect((await stat(join(veil.dataDir, f))).size).toBeLessThanOrEqual(ROTATE);
    expect((await auditRecords()).length).toBeGreaterThan(300);
  });

  it('shows 100 records per page, newest first, and every kept record once across the pages', async () => {
    const kept = await auditRecords();
    let path = '/admin/audit';
    const pages: number[] = [];
    let first = '';
    for (let i = 0; i < 20 && path; i++) {
      const res = await viewer.get(path);
      expect(res.status).toBe(200);
      if (!first) first = /<tbody><tr><td>([^<]+)<\/td>/.exec(res.text)![1]!;
      pages.push((res.text.match(/<tr><td>/g) ?? []).length);
      path = /href="(\/admin\/audit\?before=[0-9.]+)" rel="next"/.exec(res.text)?.[1] ?? '';
    }
    expect(path).toBe('');
    expect(pages.length).toBeGreaterThanOrEqual(4);
    expect(pages.slice(0, -1)).toEqual(pages.slice(0, -1).map(() => 100));
    expect(pages.reduce((a, b) => a + b, 0)).toBe(kept.length);
    // newest first: the first row is the last record of audit.log
    const newest = (await readFile(join(veil.dataDir, 'audit.log'), 'utf8')).trim().split('\n').pop()!;
    expect(first).toBe((JSON.parse(newest) as { time: string }).time);
    // a cursor an attacker makes up is refused or reads nothing outside the log
    expect((await viewer.get('/admin/audit?before=../../etc/passwd')).status).toBe(200);
  });
});

describe('the data dir', () => {
  it('holds only files of mode 0600 or 0400 and directories of mode 0700', async () => {
    const walk = async (dir: string): Promise<[string, number, boolean][]> =>
      (
        await Promise.all(
          (await readdir(dir, { withFileTypes: true })).map(async (e) => {
            const path = join(dir, e.name);
            const mode = (await stat(path)).mode & 0o777;
            return e.isDirectory()
              ? [[path, mode, true] as [string, number, boolean], ...(await walk(path))]
              : [[path, mode, false] as [string, number, boolean]];
          }),
        )
      ).flat();
    const entries = await walk(veil.dataDir);
    const names = entries.map(([p]) => p.slice(veil.dataDir.length + 1));
    for (const expected of [
      'keystore.json',
      'dev-client.secret',
      'audit.log',
      'audit.log.1',
      'config-versions/index.json',
      'config-versions/0001.yaml',
      'config-versions/0002.yaml',
    ])
      expect(names).toContain(expected);
    expect(names.some((n) => /^config-versions\/drafts\/[0-9a-f-]{36}\.yaml$/.test(n))).toBe(true);
    const wrongModes = entries
      .filter(([, mode, isDir]) => (isDir ? mode !== 0o700 : mode !== 0o600 && mode !== 0o400))
      .map(([p, mode]) => `${p.slice(veil.dataDir.length + 1)} ${mode.toString(8)}`);
    expect(wrongModes).toEqual([]);
    expect((await stat(join(veil.dataDir, 'config-versions', '0002.yaml'))).mode & 0o777).toBe(0o400);
  });
});
