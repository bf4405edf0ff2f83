// Attack: a viewer reads the client secret hashes (scrypt) off version pages and exports, and
// tries passwords offline. Against `veil serve` as a process, the viewer in Chromium.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashClientSecret } from '../../../src/identity/client-secret.ts';
import { launchChromium, signInAs } from '../../helpers/browser.ts';
import { portalConfigText } from '../../helpers/portal-client.ts';
import { draftIdOf, portalSession, startVeilServe, type VeilProcess } from '../../helpers/veil-process.ts';

let veil: VeilProcess;
let browser: Browser;
let configText: string;
let draft: string;
const hashesIn = (text: string): string[] => text.match(/scrypt\$[^'"\s]+/g) ?? [];

beforeAll(async () => {
  configText = await portalConfigText();
  veil = await startVeilServe({ configText });
  browser = await launchChromium();
  const editor = await portalSession(veil, 'editor');
  draft = draftIdOf(await editor.post('/admin/drafts', { from: 'v1' }))!;
  // the editor replaces the secret of client no-admin (pasting a new hash) and saves the rest as shown
  const shown = (await editor.get(`/admin/drafts/${draft}/export`)).text;
  const fresh = await hashClientSecret('new-secret', { N: 1024, r: 8, p: 1 });
  const edited = shown.replace(/(no-admin: \{ secretHash: ')hidden:[0-9a-f]{12}/, (_m, head: string) => `${head}${fresh}`);
  expect(edited).not.toBe(shown);
  expect((await editor.post(`/admin/drafts/${draft}/yaml`, { yaml: edited })).status).toBe(303);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await veil?.stop();
});

describe('client secret hashes are never shown or exported', () => {
  it('the configuration holds hashes, and the stored draft kept every one the editor could not see', async () => {
    const hashes = hashesIn(configText);
    expect(hashes.length).toBe(5);
    const stored = await readFile(join(veil.dataDir, 'config-versions', 'drafts', `${draft}.yaml`), 'utf8');
    // four kept as they were, one replaced by the editor's new hash
    expect(hashesIn(stored).filter((h) => hashes.includes(h))).toHaveLength(4);
    expect(hashesIn(stored)).toHaveLength(5);
  });

  it('no page or export a viewer reaches carries a secret hash', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await signInAs(page, veil.url, 'viewer');
    const stored = await readFile(join(veil.dataDir, 'config-versions', 'drafts', `${draft}.yaml`), 'utf8');
    const secrets = [...hashesIn(configText), ...hashesIn(stored)].map((h) => h.split('$').slice(-2).join('$'));
    const pages = [
      '/admin',
      '/admin/versions',
      '/admin/versions/1',
      `/admin/drafts/${draft}`,
      `/admin/diff?from=v1&to=draft:${draft}`,
      `/admin/tester?source=draft:${draft}`,
      '/admin/matrix',
      '/admin/keys',
      '/admin/pipelines',
      '/admin/audit',
    ];
    for (const path of pages) {
      await page.goto(`${veil.url}${path}`);
      const html = await page.content();
      expect(html, path).not.toContain('scrypt$');
      for (const s of secrets) expect(html, path).not.toContain(s);
    }
    for (const path of ['/admin/versions/1/export', `/admin/drafts/${draft}/export`]) {
      const res = await page.request.get(`${veil.url}${path}`);
      expect(res.status(), path).toBe(200);
      const text = await res.text();
      expect(text, path).not.toContain('scrypt$');
      for (const s of secrets) expect(text, path).not.toContain(s);
      expect((text.match(/secretHash: 'hidden:[0-9a-f]{12}'/g) ?? []).length, path).toBe(5);
    }
    // the diff still tells the publisher that no-admin's secret changed, and nothing else
    await page.goto(`${veil.url}/admin/diff?from=v1&to=draft:${draft}`);
    const changed = await page.locator('.diff-add, .diff-del').allTextContents();
    expect(changed).toHaveLength(2);
    expect(changed.every((l) => l.includes("no-admin: { secretHash: 'hidden:"))).toBe(true);
    await context.close();
  });

  it('the hidden hashes come back on save, so the clients still sign in after a publish', async () => {
    const publisher = await portalSession(veil, 'publisher');
    const page = (await publisher.get(`/admin/drafts/${draft}`)).text;
    const reviewed = /name="reviewed" value="([0-9a-f]{64})"/.exec(page)![1]!;
    expect((await publisher.post(`/admin/drafts/${draft}/publish`, { reviewed })).status).toBe(303);
    const versionFile = await readFile(join(veil.dataDir, 'config-versions', '0002.yaml'), 'utf8');
    expect(hashesIn(versionFile)).toHaveLength(5);
    expect(versionFile).not.toContain('hidden:');
    // identity changes take effect at the next start: what matters here is that the stored hashes are intact
    const token = async (id: string, secret: string) =>
      (
        await veil.request('/connect/token', {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'client_credentials', client_id: id, client_secret: secret }).toString(),
        })
      ).status;
    expect(await token('viewer', 'viewer-secret')).toBe(200);
  });
});
