// Attack: erase or probe data subjects over the admin API without the right, with malformed or
// huge bodies and ids holding control characters; and the id must never come back out — not in
// an answer, an error, a log line or an audit record. Against a real service over HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyReceipt } from '../../../src/subjects/index.ts';
import { SUBJECT_CALLS_BURST, SUBJECT_CALLS_PER_SECOND } from '../../../src/http/routes/subject-routes.ts';
import type { TestService } from '../../helpers/http-service.ts';
import { startPortalService } from '../../helpers/portal-client.ts';

const ID = 'zed.unique-erasure-id@example.org';
let t: TestService;
const tokens: Record<string, string> = {};
const answers: string[] = [];

beforeAll(async () => {
  t = await startPortalService();
  for (const client of ['viewer', 'editor', 'publisher', 'tester', 'no-admin']) tokens[client] = await t.token(client, `${client}-secret`);
  await t.service.subjects.keyFor(ID);
}, 60_000);
afterAll(async () => t?.close());

async function post(path: string, body: unknown, options: { token?: string; type?: string; raw?: string } = {}) {
  const res = await fetch(`${t.url}/admin/subjects/${path}`, {
    method: 'POST',
    headers: { 'content-type': options.type ?? 'application/json', ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) },
    body: options.raw ?? JSON.stringify(body),
  });
  const text = await res.text();
  answers.push(text);
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    headers: res.headers,
    text,
    json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined,
  };
}

const state = async () => (await t.service.subjects.status(ID)).state;

describe('POST /admin/subjects/erase and /status', () => {
  it('without a token: 401 TOKEN_MISSING as problem details, recorded, nothing erased', async () => {
    const res = await post('erase', { subject: ID, reason: 'r' });
    expect(res).toMatchObject({ status: 401, type: expect.stringContaining('application/problem+json'), json: { code: 'TOKEN_MISSING' } });
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="veil"');
    expect((await post('status', { subject: ID }, { token: 'not.a.token' })).json).toMatchObject({ code: 'TOKEN_INVALID' });
    expect(t.audit.events.filter((e) => e.admin?.action.startsWith('subject.')).map((e) => [e.admin?.action, e.outcome, e.code])).toEqual([
      ['subject.erase', 'denied', 'TOKEN_MISSING'],
      ['subject.status', 'denied', 'TOKEN_INVALID'],
    ]);
    expect(await state()).toBe('exists');
  });

  it.each(['viewer', 'editor', 'tester', 'no-admin'])('%s may not erase: 403 ERASURE_NOT_PERMITTED, nothing erased', async (client) => {
    const res = await post('erase', { subject: ID, reason: 'r' }, { token: tokens[client] });
    expect(res).toMatchObject({ status: 403, json: { code: 'ERASURE_NOT_PERMITTED' } });
    expect(await state()).toBe('exists');
  });

  it('any admin role reads a status; a token without one may not', async () => {
    for (const client of ['viewer', 'editor', 'tester']) {
      const res = await post('status', { subject: ID }, { token: tokens[client] });
      expect(res).toMatchObject({ status: 200, json: { state: 'exists', generation: 1, subject: expect.stringMatching(/^[0-9a-f]{32}$/) } });
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
    expect(await post('status', { subject: ID }, { token: tokens['no-admin'] })).toMatchObject({ status: 403, json: { code: 'ERASURE_NOT_PERMITTED' } });
  });

  it.each([
    ['a NUL', 'a\u0000b'],
    ['a newline', 'zed\nforged log line'],
    ['an escape sequence', '\u001b[31mred'],
    ['a C1 control', 'a\u0085b'],
    ['nothing', ''],
    ['600 bytes', 'é'.repeat(300)],
  ])('an id with %s: 400 SUBJECT_ID_INVALID, not echoed', async (_label, id) => {
    for (const [path, body] of [
      ['erase', { subject: id, reason: 'r' }],
      ['status', { subject: id }],
    ] as const) {
      const res = await post(path, body, { token: tokens.publisher });
      expect(res).toMatchObject({ status: 400, json: { code: 'SUBJECT_ID_INVALID' } });
      if (id) expect(res.text).not.toContain(id);
    }
  });

  it.each([
    ['no reason', { subject: ID }],
    ['an extra field', { subject: ID, reason: 'r', by: 'someone-else' }],
    ['a number as the id', { subject: 42, reason: 'r' }],
    ['an array', [ID, 'r']],
    ['null', null],
    ['a string', ID],
    ['a reason over 500 characters', { subject: ID, reason: 'x'.repeat(501) }],
    ['a reason with a newline', { subject: ID, reason: 'a\nb' }],
    ['a reason naming the subject', { subject: ID, reason: `please erase ${ID}` }],
  ])('an erasure with %s: 400 ERASURE_REQUEST_INVALID, nothing erased', async (_label, body) => {
    const res = await post('erase', body, { token: tokens.publisher });
    expect(res).toMatchObject({ status: 400, json: { code: 'ERASURE_REQUEST_INVALID' } });
    expect(res.text).not.toContain(ID);
    expect(await state()).toBe('exists');
  });

  it('a huge body is cut at 8 KiB (413), a form or text body is refused (415), broken JSON is 400, GET is 405', async () => {
    const huge = await post('erase', { subject: ID, reason: 'x'.repeat(9000) }, { token: tokens.publisher });
    expect(huge).toMatchObject({ status: 413, json: { code: 'BODY_TOO_LARGE' } });
    const megabytes = await post('status', { subject: 'y'.repeat(3 * 1024 * 1024) }, { token: tokens.publisher });
    expect(megabytes.status).toBe(413);
    expect(
      await post('erase', undefined, { token: tokens.publisher, type: 'application/x-www-form-urlencoded', raw: `subject=${encodeURIComponent(ID)}&reason=r` }),
    ).toMatchObject({ status: 415 });
    expect(await post('erase', undefined, { token: tokens.publisher, type: 'text/plain', raw: ID })).toMatchObject({ status: 415 });
    expect(await post('erase', undefined, { token: tokens.publisher, raw: `{"subject": "${ID}"` })).toMatchObject({
      status: 400,
      json: { code: 'REQUEST_MALFORMED' },
    });
    const get = await fetch(`${t.url}/admin/subjects/erase`, { headers: { authorization: `Bearer ${tokens.publisher}` } });
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST']);
    expect(await state()).toBe('exists');
  });

  it('a publisher erases: the receipt verifies against the key set, names the caller, and the status turns erased', async () => {
    const res = await post('erase', { subject: ID, reason: 'Art. 17 request 99' }, { token: tokens.publisher });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const { receipt, claims } = res.json as { receipt: string; claims: Record<string, unknown> };
    expect(await verifyReceipt(receipt, t.service.keystore, { issuer: t.service.issuer })).toEqual(claims);
    expect(claims).toMatchObject({ by: 'publisher', reason: 'Art. 17 request 99', generation: 1, alreadyErased: false, iss: t.service.issuer });
    expect(await state()).toBe('erased');
    expect((await post('status', { subject: ID }, { token: tokens.viewer })).json).toMatchObject({ state: 'erased', subject: claims.sub });
    const again = await post('erase', { subject: ID, reason: 'second request' }, { token: tokens.publisher });
    expect(again.json).toMatchObject({ claims: { alreadyErased: true, destroyedKey: claims.destroyedKey } });
    const recorded = t.audit.events.find((e) => e.admin?.action === 'subject.erase' && e.outcome === 'ok');
    expect(recorded).toMatchObject({
      channel: 'admin',
      client: 'publisher',
      erasure: { subject: claims.sub, receipt: claims.jti, reason: 'Art. 17 request 99' },
    });
  });

  it('a client sweeping ids through status is slowed down: 429 RATE_LIMITED with Retry-After past the burst, audited', async () => {
    const replies = [];
    const started = Date.now();
    for (let i = 0; i < 90; i++) replies.push(await post('status', { subject: `sweep-${i}@example.org` }, { token: tokens.tester }));
    const seconds = (Date.now() - started) / 1000;
    const limited = replies.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    // the burst, and what refilled while the sweep ran
    expect(replies.filter((r) => r.status === 200).length).toBeLessThanOrEqual(SUBJECT_CALLS_BURST + Math.ceil(seconds * SUBJECT_CALLS_PER_SECOND) + 1);
    expect(limited[0]!.json).toMatchObject({ code: 'RATE_LIMITED' });
    expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(t.audit.events.some((e) => e.admin?.action === 'subject.status' && e.code === 'RATE_LIMITED')).toBe(true);
  });

  it('the id never appeared in an answer, an error, a log line or an audit record', () => {
    for (const [what, texts] of [
      ['answers', answers],
      ['log lines', t.logs],
      ['audit records', t.audit.events.map((e) => JSON.stringify(e))],
    ] as const) {
      const leaks = texts.filter((text) => text.includes(ID) || text.includes('zed.unique') || text.includes('forged log line'));
      expect(leaks, what).toEqual([]);
    }
    expect(t.logs.length).toBeGreaterThan(0);
  });
});
