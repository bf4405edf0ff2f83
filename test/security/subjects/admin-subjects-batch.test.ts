// Attack and use: erase data subjects in batches over the admin API — without the right, with
// bodies that are not a batch, too large, or holding ids veil refuses; and the ids never come back
// out. Against a real service over HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyReceipt } from '../../../src/subjects/index.ts';
import type { TestService } from '../../helpers/http-service.ts';
import { startPortalService } from '../../helpers/portal-client.ts';

const IDS = Array.from({ length: 250 }, (_, i) => `batch.person.${i}@example.org`);
let t: TestService;
const tokens: Record<string, string> = {};
const answers: string[] = [];

beforeAll(async () => {
  t = await startPortalService();
  for (const client of ['viewer', 'publisher']) tokens[client] = await t.token(client, `${client}-secret`);
  for (const id of IDS) await t.service.subjects.keyFor(id);
}, 60_000);
afterAll(async () => t?.close());

async function batch(body: unknown, token?: string, raw?: string) {
  const res = await fetch(`${t.url}/admin/subjects/erase-batch`, {
    method: 'POST',
    body: raw ?? JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  const text = await res.text();
  answers.push(text);
  return { status: res.status, text, json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined, cache: res.headers.get('cache-control') };
}

describe('POST /admin/subjects/erase-batch', () => {
  it('without a token 401, without admin-publisher 403: nothing erased', async () => {
    expect(await batch({ subjects: IDS.slice(0, 2), reason: 'r' })).toMatchObject({ status: 401, json: { code: 'TOKEN_MISSING' } });
    expect(await batch({ subjects: IDS.slice(0, 2), reason: 'r' }, tokens.viewer)).toMatchObject({ status: 403, json: { code: 'ERASURE_NOT_PERMITTED' } });
    expect((await t.service.subjects.status(IDS[0]!)).state).toBe('exists');
  });

  it.each([
    ['a single subject', { subject: 'a', reason: 'r' }],
    ['no subjects', { subjects: [], reason: 'r' }],
    ['1,001 subjects', { subjects: Array.from({ length: 1001 }, (_, i) => `n${i}`), reason: 'r' }],
    ['a number among them', { subjects: ['a', 7], reason: 'r' }],
    ['another field', { subjects: ['a'], reason: 'r', by: 'me' }],
    ['no reason', { subjects: ['a'] }],
  ])('%s: 400 ERASURE_REQUEST_INVALID, no id echoed', async (_, body) => {
    const res = await batch(body, tokens.publisher);
    expect(res).toMatchObject({ status: 400, json: { code: 'ERASURE_REQUEST_INVALID' } });
    expect(res.text).not.toMatch(/"a"|n1000/);
  });

  it("erases a batch: a receipt per subject in order (verifiable), a refused id as its entry's error; again: every receipt, already erased", async () => {
    const subjects = [...IDS, 'bad\u0000id', IDS[0]!];
    const res = await batch({ subjects, reason: 'accounts closed' }, tokens.publisher);
    expect(res.status).toBe(200);
    expect(res.cache).toBe('no-store');
    const results = (res.json as { results: { receipt?: string; claims?: { sub: string; alreadyErased: boolean }; error?: { code: string } }[] }).results;
    expect(results).toHaveLength(252);
    expect(results[250]).toEqual({ error: expect.objectContaining({ code: 'SUBJECT_ID_INVALID' }) });
    expect(results[251]!.claims!.sub).toBe(results[0]!.claims!.sub);
    for (const r of results.slice(0, 250)) expect(await verifyReceipt(r.receipt!, t.service.keystore)).toMatchObject({ alreadyErased: false });
    expect((await t.service.subjects.status(IDS[249]!)).state).toBe('erased');
    const again = await batch({ subjects: IDS, reason: 'accounts closed' }, tokens.publisher);
    expect((again.json as { results: { claims: { alreadyErased: boolean } }[] }).results.every((r) => r.claims.alreadyErased)).toBe(true);
    // one audit record per subject, under its reference
    expect(t.audit.events.filter((e) => e.admin?.action === 'subject.erase' && e.outcome === 'ok')).toHaveLength(501);
  });

  it('no answer and no audit record holds an id', () => {
    const everything = [...answers, JSON.stringify(t.audit.events)].join('\n');
    for (const id of IDS.slice(0, 20)) expect(everything).not.toContain(id);
  });
});
