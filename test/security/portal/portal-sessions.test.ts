// Attack: one admin signs in again and again to push everybody else out of the session store
// (it used to evict the oldest of 1,000 sessions, whoever held them). Against `veil serve`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portalConfigText } from '../../helpers/portal-client.ts';
import { portalSession, startVeilServe, type VeilProcess } from '../../helpers/veil-process.ts';

let veil: VeilProcess;

beforeAll(async () => {
  veil = await startVeilServe({ configText: await portalConfigText('portal:\n  sessionsPerIdentity: 2\n  maxSessions: 5\n') });
}, 120_000);
afterAll(async () => veil?.stop());

describe('portal sessions are capped per identity', () => {
  it("ends only the signing-in identity's own oldest sessions; another admin's session survives", async () => {
    const viewer = await portalSession(veil, 'viewer');
    const first = await portalSession(veil, 'publisher');
    const publisherSessions = [first];
    for (let i = 0; i < 20; i++) publisherSessions.push(await portalSession(veil, 'publisher'));
    expect((await viewer.get('/admin')).status).toBe(200);
    // the publisher keeps its 2 newest sessions; the older ones are signed out
    const statuses = await Promise.all(publisherSessions.map(async (s) => (await s.get('/admin')).status));
    expect(statuses.slice(-2)).toEqual([200, 200]);
    expect(statuses.slice(0, -2).every((s) => s === 303)).toBe(true);
  });

  it('refuses a new identity with 503 SESSIONS_FULL when the store is full, signing nobody out', async () => {
    const editor = await portalSession(veil, 'editor');
    const tester = await portalSession(veil, 'tester');
    // viewer 1 + publisher 2 + editor 1 + tester 1 = 5 = maxSessions
    const refused = await veil.request('/admin/sign-in', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ kind: 'client', client_id: 'veil-dev', client_secret: 'x' }).toString(),
    });
    expect(refused.status).toBe(401); // wrong secret: refused before a session is considered
    const devSecret = (await (await import('node:fs/promises')).readFile(`${veil.dataDir}/dev-client.secret`, 'utf8')).trim();
    const full = await veil.request('/admin/sign-in', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ kind: 'client', client_id: 'veil-dev', client_secret: devSecret }).toString(),
    });
    expect(full.status).toBe(503);
    expect(full.text).toContain('SESSIONS_FULL');
    expect(full.headers['set-cookie']).toBeUndefined();
    expect((await editor.get('/admin')).status).toBe(200);
    expect((await tester.get('/admin')).status).toBe(200);
    // an identity at its own cap (the publisher, 2) may still sign in: it replaces its own oldest session
    expect((await (await portalSession(veil, 'publisher')).get('/admin')).status).toBe(200);
    expect((await editor.get('/admin')).status).toBe(200);
    expect((await tester.get('/admin')).status).toBe(200);
  });
});
