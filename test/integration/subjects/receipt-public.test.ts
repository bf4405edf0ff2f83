// Issue 43: an auditor or a data subject verifies an erasure receipt with no veil code and no key
// set — against the service's /.well-known/veil-receipt-keys.json, with jose and with PyJWT running the
// documented example (docs/examples/verify-receipt.py), across a rotation of the receipt key. And
// a receipt never passes as an access token although its key is published beside the token key.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRemoteJWKSet, jwtVerify, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../../helpers/http-service.ts';
import { startPortalService } from '../../helpers/portal-client.ts';
import { ROOT } from '../../helpers/processes.ts';
import { pythonVenv } from '../../helpers/python-venv.ts';

const TYP = 'veil-erasure-receipt+jwt';
const VERIFIER = join(ROOT, 'docs/examples/verify-receipt.py');
const SUBJECTS = ['first.receipt@example.org', 'second.receipt@example.org'];

let t: TestService;
let python: string;
const receipts: string[] = [];

async function erase(subject: string): Promise<string> {
  const res = await fetch(`${t.url}/admin/subjects/erase`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${await t.token('publisher', 'publisher-secret')}` },
    body: JSON.stringify({ subject, reason: 'Art. 17 request' }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { receipt: string }).receipt;
}

/** docs/examples/verify-receipt.py with the receipts on stdin: exit code, stdout lines, stderr. */
function pyVerify(source: string, lines: string[], issuer?: string): Promise<{ code: number; out: string[]; err: string }> {
  return new Promise((resolve) => {
    const child = execFile(python, [VERIFIER, source, ...(issuer ? [issuer] : [])], { timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, out: stdout.trim().split('\n').filter(Boolean), err: stderr });
    });
    child.stdin!.end(`${lines.join('\n')}\n`);
  });
}

beforeAll(async () => {
  [t, python] = await Promise.all([startPortalService(), pythonVenv('pyjwt').then((venv) => join(venv, 'bin/python'))]);
  for (const s of SUBJECTS) await t.service.subjects.keyFor(s);
  receipts.push(await erase(SUBJECTS[0]!));
  // a rotation of the receipt key: the receipt signed before must keep verifying
  await t.service.keystore.rotate('veil-receipts');
  receipts.push(await erase(SUBJECTS[1]!));
}, 600_000);
afterAll(async () => t?.close());

describe('erasure receipts verified by outsiders', () => {
  it('/.well-known/veil-receipt-keys.json lists every receipt key version (kid, alg ES256, use sig, no private part); jwks.json, which services trust for tokens, none', async () => {
    const res = await fetch(`${t.url}/.well-known/veil-receipt-keys.json`);
    expect(res.status).toBe(200);
    const { keys } = (await res.json()) as { keys: JWK[] };
    expect(keys.map((k) => k.kid).sort()).toEqual(['veil-receipts.v1', 'veil-receipts.v2']);
    for (const k of keys) {
      expect(k).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
      expect(k).not.toHaveProperty('d');
    }
    const tokenKeys = ((await (await fetch(`${t.url}/.well-known/jwks.json`)).json()) as { keys: JWK[] }).keys;
    expect(tokenKeys.length).toBeGreaterThan(0);
    expect(tokenKeys.filter((k) => k.kid?.startsWith('veil-receipts'))).toEqual([]);
    // and a receipt does not verify against the token keys
    await expect(jwtVerify(receipts[0]!, createRemoteJWKSet(new URL(`${t.url}/.well-known/jwks.json`)))).rejects.toThrow();
  });

  it('jose and the remote JWKS alone verify both receipts, each naming the version that signed it', async () => {
    const keySet = createRemoteJWKSet(new URL(`${t.url}/.well-known/veil-receipt-keys.json`));
    const seen = [];
    for (const receipt of receipts) {
      const { payload, protectedHeader } = await jwtVerify(receipt, keySet, { algorithms: ['ES256'], typ: TYP, issuer: t.service.issuer });
      seen.push([protectedHeader.kid, payload.keyVersion]);
    }
    expect(seen).toEqual([
      ['veil-receipts.v1', 1],
      ['veil-receipts.v2', 2],
    ]);
  });

  it('PyJWT runs the documented example against the URL and against a JWKS file; a changed receipt exits 1', async () => {
    const byUrl = await pyVerify(`${t.url}/.well-known/veil-receipt-keys.json`, receipts, t.service.issuer);
    expect(byUrl.code, byUrl.err).toBe(0);
    expect(byUrl.out.map((l) => (JSON.parse(l) as { kid: string }).kid)).toEqual(['veil-receipts.v1', 'veil-receipts.v2']);

    const file = join(t.dataDir, 'jwks.json');
    await writeFile(file, await (await fetch(`${t.url}/.well-known/veil-receipt-keys.json`)).text());
    const byFile = await pyVerify(file, receipts);
    expect(byFile.code, byFile.err).toBe(0);
    expect(byFile.out).toHaveLength(2);

    const [h, p, s] = receipts[1]!.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
    const changed = `${h}.${Buffer.from(JSON.stringify({ ...claims, generation: 7 })).toString('base64url')}.${s}`;
    const refused = await pyVerify(file, [receipts[0]!, changed]);
    expect(refused.code).toBe(1);
    expect(refused.out).toHaveLength(1); // the first verified, then the changed one stopped it
    expect(refused.err).toMatch(/refused: InvalidSignatureError/);
    // another issuer than the one asked for is refused
    expect((await pyVerify(file, receipts.slice(0, 1), 'https://someone-else.example')).code).toBe(1);
  });

  it('a token signed by the token key is not a receipt to the example; a receipt is not a bearer token to veil', async () => {
    const token = await t.token('publisher', 'publisher-secret');
    const asReceipt = await pyVerify(`${t.url}/.well-known/veil-receipt-keys.json`, [token]);
    expect(asReceipt.code).toBe(1);
    expect(asReceipt.err).toContain('not an erasure receipt of veil-receipts');
    for (const path of ['/admin/subjects/status', '/transform']) {
      const res = await fetch(`${t.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${receipts[1]}` },
        body: '{}',
      });
      expect(res.status, path).toBe(401);
    }
  });
});
