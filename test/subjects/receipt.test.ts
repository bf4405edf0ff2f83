import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { JwtSigner } from '../../src/keystore/jwt-signer.ts';
import { RECEIPT_KEY, RECEIPT_TYP, ReceiptSigner, verifyReceipt } from '../../src/subjects/receipt.ts';
import type { Erasure } from '../../src/subjects/index.ts';
import { cleanup, keystoreIn, tempDir } from './helpers.ts';

afterEach(cleanup);

const ERASURE: Erasure = {
  subject: 'a1'.repeat(16),
  generation: 1,
  erasedAt: '2026-11-27T10:00:00.000Z',
  by: 'dpo@example.org',
  reason: 'Art. 17 request 42',
  destroyedKey: 'b2'.repeat(32),
  alreadyErased: false,
};
const NOW = new Date('2026-11-27T10:00:01.000Z');

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const parts = (jws: string) => jws.split('.') as [string, string, string];
const decode = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;

async function signed() {
  const keys = await keystoreIn(await tempDir());
  const { receipt, claims } = await new ReceiptSigner(keys, 'https://veil.example').sign(ERASURE, NOW);
  return { keys, receipt, claims };
}

describe('erasure receipts', () => {
  it('are an ES256 compact JWS of the receipt type under veil-receipts, created on first use, with the erasure as claims', async () => {
    const { keys, receipt, claims } = await signed();
    expect(keys.info(RECEIPT_KEY)).toMatchObject({ type: 'jwt-es256', primary: 1 });
    expect(decode(parts(receipt)[0])).toEqual({ alg: 'ES256', typ: RECEIPT_TYP, kid: `${RECEIPT_KEY}.v1` });
    expect(claims).toMatchObject({
      iss: 'https://veil.example',
      sub: ERASURE.subject,
      generation: 1,
      erasedAt: ERASURE.erasedAt,
      by: ERASURE.by,
      reason: ERASURE.reason,
      destroyedKey: ERASURE.destroyedKey,
      alreadyErased: false,
      iat: NOW.getTime() / 1000,
    });
    expect(claims.jti).toMatch(/^[0-9a-f-]{36}$/);
    expect(await verifyReceipt(receipt, keys)).toEqual(claims);
    expect(await verifyReceipt(receipt, keys, { issuer: 'https://veil.example' })).toEqual(claims);
  });

  it('each receipt has its own jti; an erasure without a key has no destroyedKey', async () => {
    const keys = await keystoreIn(await tempDir());
    const signer = new ReceiptSigner(keys, 'veil');
    const keyless = { ...ERASURE, destroyedKey: undefined };
    const [a, b] = [await signer.sign(keyless, NOW), await signer.sign(keyless, NOW)];
    expect(a.claims.jti).not.toBe(b.claims.jti);
    expect('destroyedKey' in (await verifyReceipt(a.receipt, keys))).toBe(false);
  });

  it('still verify after veil-receipts is rotated; new ones are signed by the new version', async () => {
    const { keys, receipt } = await signed();
    await keys.rotate(RECEIPT_KEY);
    expect((await verifyReceipt(receipt, keys)).sub).toBe(ERASURE.subject);
    const fresh = await new ReceiptSigner(keys, 'veil').sign(ERASURE, NOW);
    expect(decode(parts(fresh.receipt)[0]).kid).toBe(`${RECEIPT_KEY}.v2`);
    expect((await verifyReceipt(fresh.receipt, keys)).jti).toBe(fresh.claims.jti);
  });

  it('a changed claim fails the signature', async () => {
    const { keys, receipt } = await signed();
    const [h, p, s] = parts(receipt);
    for (const change of [{ generation: 2 }, { alreadyErased: true }, { reason: 'nothing' }, { sub: 'c3'.repeat(16) }]) {
      await expect(verifyReceipt(`${h}.${b64({ ...decode(p), ...change })}.${s}`, keys)).rejects.toMatchObject({
        code: 'RECEIPT_INVALID',
        message: expect.stringContaining('signature'),
      });
    }
  });

  it('a receipt of another key set, or a key set without veil-receipts, is refused', async () => {
    const { receipt } = await signed();
    const other = await keystoreIn(await tempDir());
    await expect(verifyReceipt(receipt, other)).rejects.toMatchObject({ code: 'RECEIPT_INVALID', message: expect.stringContaining('holds no veil-receipts') });
    await new ReceiptSigner(other, 'veil').sign(ERASURE, NOW);
    await expect(verifyReceipt(receipt, other)).rejects.toMatchObject({ code: 'RECEIPT_INVALID' });
  });

  it('alg none, another algorithm, a wrong typ, a wrong issuer, a bent shape are refused', async () => {
    const { keys, receipt, claims } = await signed();
    const [h, p] = parts(receipt);
    const refused = (jws: string, options = {}) => expect(verifyReceipt(jws, keys, options)).rejects.toMatchObject({ code: 'RECEIPT_INVALID' });
    await refused(`${b64({ alg: 'none', typ: RECEIPT_TYP })}.${p}.`);
    await refused(`${b64({ ...decode(h), alg: 'HS256' })}.${p}.${Buffer.from('x').toString('base64url')}`);
    // signed by the right key, but as another type of token
    const signer = new JwtSigner(keys, RECEIPT_KEY);
    await refused(await signer.sign(claims, 'at+jwt'));
    await refused(receipt, { issuer: 'https://elsewhere.example' });
    // a right signature over claims that are not a receipt's: an extra claim, a missing one, a wrong type
    await refused(await signer.sign({ ...claims, jti: randomUUID(), extra: 1 }, RECEIPT_TYP));
    await refused(await signer.sign({ ...claims, by: undefined }, RECEIPT_TYP));
    await refused(await signer.sign({ ...claims, generation: '1' }, RECEIPT_TYP));
    await refused(await signer.sign({ ...claims, sub: 'alice@example.org' }, RECEIPT_TYP));
    for (const junk of ['', 'x', 'a.b.c', `${receipt}.${receipt}`, 'e'.repeat(5000)]) await refused(junk);
  });

  it('never echo the receipt in an error', async () => {
    const { keys, receipt } = await signed();
    const [h, p] = parts(receipt);
    const error = await verifyReceipt(`${h}.${p}.AAAA`, keys).catch((e: Error) => e);
    expect((error as Error).message).not.toContain(p);
  });
});
