// Attack: a draft that makes the serving process work — a key reference pinned to version 60000
// (the sandbox used to build every version, quadratically), the longest sequence of the costliest
// step on the longest values in as many saved test cases as allowed — viewed again and again.
// Against `veil serve` as a process: refusals with their code, and /healthz keeps its latency.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portalConfigText } from '../../helpers/portal-client.ts';
import { draftIdOf, portalSession, startVeilServe, type PortalSession, type VeilProcess } from '../../helpers/veil-process.ts';

let veil: VeilProcess;
let editor: PortalSession;
const FPE_LINE = '      - { type: ff1, key: pan-ff1, alphabet: digits, keepFirst: 6, keepLast: 4 }';
const drafts = async () => (await readdir(join(veil.dataDir, 'config-versions', 'drafts'))).filter((f) => f.endsWith('.json')).length;

beforeAll(async () => {
  veil = await startVeilServe({ configText: await portalConfigText('portal:\n  sandboxTimeoutMs: 2000\n') });
  editor = await portalSession(veil, 'veil-dev', (await readFile(join(veil.dataDir, 'dev-client.secret'), 'utf8')).trim());
}, 120_000);
afterAll(async () => veil?.stop());

describe('what a draft may make the server do is bounded', () => {
  it('refuses a key version above the limit (422 DRAFT_LIMIT_EXCEEDED at /keys/pan-ff1/version), on import and on save; nothing is stored', async () => {
    const text = (await editor.get('/admin/versions/1/export')).text;
    const huge = text.replace('pan-ff1: { type: ff1, version: 1 }', 'pan-ff1: { type: ff1, version: 60000 }');
    expect(huge).toContain('version: 60000');
    const imported = await editor.post('/admin/drafts', { yaml: huge });
    expect(imported.status).toBe(422);
    expect(imported.text).toContain('DRAFT_LIMIT_EXCEEDED');
    expect(imported.text).toContain('/keys/pan-ff1/version');
    expect(await drafts()).toBe(0);

    const id = draftIdOf(await editor.post('/admin/drafts', { from: 'v1' }))!;
    const saved = await editor.post(`/admin/drafts/${id}/yaml`, { yaml: huge });
    expect(saved.status).toBe(422);
    expect(saved.text).toContain('DRAFT_LIMIT_EXCEEDED');
    expect((await editor.get(`/admin/drafts/${id}/export`)).text).toContain('pan-ff1: { type: ff1, version: 1 }');

    // at the limit, sandbox keys are derived for the versions used only: the page and the tester are quick
    expect((await editor.post(`/admin/drafts/${id}/yaml`, { yaml: text.replace('version: 1 }', 'version: 10000 }') })).status).toBe(303);
    let started = Date.now();
    expect((await editor.get(`/admin/drafts/${id}`)).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2000);
    started = Date.now();
    const tested = await editor.post('/admin/tester', {
      source: `draft:${id}`,
      className: 'Customer',
      role: 'fraud',
      action: 'Unprotect',
      keys: 'sandbox',
      'value:cardNumber': '4111-1111-1111-1111',
    });
    expect(tested.status).toBe(200);
    expect(tested.text).toContain('returned the input');
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('keeps /healthz answering within 300 ms while the heaviest allowed draft is viewed over and over', async () => {
    const text = (await editor.get('/admin/versions/1/export')).text;
    const heavy = text.replace(FPE_LINE, Array.from({ length: 16 }, () => '      - { type: ff1, key: pan-ff1, alphabet: digits, luhn: true }').join('\n'));
    const id = draftIdOf(await editor.post('/admin/drafts', { yaml: heavy }))!;
    expect(id).toBeDefined();
    const test = { name: 'heavy', field: 'Customer.cardNumber', role: 'fraud', action: 'Unprotect', value: '4'.repeat(1024), expect: 'round-trip' };
    for (let i = 0; i < 100; i++) expect((await editor.post(`/admin/drafts/${id}/tests`, { ...test, name: `heavy ${i}` })).status).toBe(303);
    const over = await editor.post(`/admin/drafts/${id}/tests`, test);
    expect(over.status).toBe(422);
    expect(over.text).toContain('DRAFT_LIMIT_EXCEEDED');
    const tooLong = await editor.post(`/admin/drafts/${id}/tests`, { ...test, value: '4'.repeat(1025) });
    expect(tooLong.status).toBe(422);

    let hammering = true;
    const views: string[] = [];
    const viewer = async () => {
      while (hammering) views.push((await editor.get(`/admin/drafts/${id}`)).text);
    };
    const latencies: number[] = [];
    const probe = async () => {
      const end = Date.now() + 8000;
      while (Date.now() < end) {
        const t0 = performance.now();
        expect((await veil.request('/healthz')).status).toBe(200);
        latencies.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 25));
      }
      hammering = false;
    };
    await Promise.all([viewer(), viewer(), viewer(), viewer(), probe()]);
    latencies.sort((a, b) => a - b);
    const p50 = latencies[Math.floor(latencies.length / 2)]!;
    const max = latencies[latencies.length - 1]!;
    expect(latencies.length).toBeGreaterThan(100);
    expect(p50).toBeLessThan(50);
    expect(max).toBeLessThan(300);
    // the saved tests of that draft take longer than the sandbox's time limit: they are stopped, not run to the end
    expect(views.length).toBeGreaterThan(0);
    expect(views.some((v) => v.includes('not run: SANDBOX_BUSY'))).toBe(true);
  }, 90_000);
});
