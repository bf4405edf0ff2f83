// Behind a TLS terminator or on TLS itself, the portal's cookie must be Secure and the sign-in
// Origin check must accept the browser; a client that merely claims https must get neither.
// `veil serve` as a process: with service.tls (a self-signed certificate made here by openssl,
// signed in with Chromium), and with service.trustProxy.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, signInAs } from '../../helpers/browser.ts';
import { portalConfigText } from '../../helpers/portal-client.ts';
import { selfSignedServerCert } from '../../helpers/tls-certs.ts';
import { startVeilServe, type VeilProcess } from '../../helpers/veil-process.ts';

let dir: string;
let browser: Browser;
const started: VeilProcess[] = [];
const signInForm = new URLSearchParams({ kind: 'client', client_id: 'viewer', client_secret: 'viewer-secret' }).toString();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'veil-tls-'));
  await selfSignedServerCert({ cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') }, 'IP:127.0.0.1,DNS:localhost');
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  for (const v of started) await v.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('veil serve on TLS (service.tls)', () => {
  it('serves HTTPS only, and Chromium signs in with a Secure, HttpOnly, SameSite=Strict cookie', async () => {
    const ca = await readFile(join(dir, 'cert.pem'));
    const veil = await startVeilServe({
      configText: await portalConfigText(`service:\n  tls: { certFile: '${join(dir, 'cert.pem')}', keyFile: '${join(dir, 'key.pem')}' }\n`),
      https: { ca },
    });
    started.push(veil);
    expect(veil.url.startsWith('https://')).toBe(true);
    expect(veil.output()).toContain(`listening on https://127.0.0.1:${new URL(veil.url).port}`);
    // plain HTTP on that port is not served
    await expect(fetch(veil.url.replace('https:', 'http:') + '/healthz')).rejects.toThrow();

    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await signInAs(page, veil.url, 'viewer');
    const cookie = (await context.cookies()).find((c) => c.name === 'veil_admin')!;
    expect(cookie).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Strict', path: '/admin' });
    await context.close();
  });
});

describe('veil serve behind a TLS terminator (service.trustProxy)', () => {
  const proxied = {
    'content-type': 'application/x-www-form-urlencoded',
    'x-forwarded-proto': 'https',
    'x-forwarded-host': 'veil.example.org',
    'x-forwarded-for': '203.0.113.7',
    origin: 'https://veil.example.org',
  };

  it('from a trusted proxy: the Origin of the public name passes and the cookie is Secure', async () => {
    const veil = await startVeilServe({ configText: await portalConfigText("service:\n  trustProxy: ['127.0.0.1/32', '::1']\n") });
    started.push(veil);
    const res = await veil.request('/admin/sign-in', { method: 'POST', headers: proxied, body: signInForm });
    expect(res.status).toBe(303);
    expect(String(res.headers['set-cookie'])).toMatch(/^veil_admin=[A-Za-z0-9_-]{43}; Path=\/admin; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/);
    // the browser's own origin (http://127.0.0.1:port) is not the site the proxy serves
    const direct = await veil.request('/admin/sign-in', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'veil.example.org', origin: veil.url },
      body: signInForm,
    });
    expect(direct.status).toBe(403);
  });

  it('from any other peer: forwarded headers are ignored — the claimed origin is refused and no cookie is Secure', async () => {
    const veil = await startVeilServe({ configText: await portalConfigText("service:\n  trustProxy: ['10.9.9.9']\n") });
    started.push(veil);
    const spoofed = await veil.request('/admin/sign-in', { method: 'POST', headers: proxied, body: signInForm });
    expect(spoofed.status).toBe(403);
    expect(spoofed.headers['set-cookie']).toBeUndefined();
    const noOrigin: Record<string, string> = { ...proxied };
    delete noOrigin.origin;
    const plain = await veil.request('/admin/sign-in', { method: 'POST', headers: noOrigin, body: signInForm });
    expect(plain.status).toBe(303);
    expect(String(plain.headers['set-cookie'])).not.toContain('Secure');
    // the per-address sign-in limit (100 failures, refilling at 100 a minute) counts the real peer,
    // not the X-Forwarded-For an attacker varies
    for (let i = 0; i < 200; i++) {
      const res = await veil.request('/admin/sign-in', {
        method: 'POST',
        headers: { ...noOrigin, 'x-forwarded-for': `198.51.${i % 256}.${i}` },
        body: new URLSearchParams({ kind: 'client', client_id: `c${i}`, client_secret: 'wrong' }).toString(),
      });
      if (res.status === 429) return;
    }
    throw new Error('varying X-Forwarded-For escaped the per-address limit');
  });
});
