// Issue 43: an auditor verifies erasure receipts without veil. `veil keys export-public` writes the
// public halves of the key set's signing keys as a JWKS; a standard JOSE library (jose, no veil
// code) verifies receipts against it across a rotation of veil-receipts. And `veil keys
// destroy-kek` refuses what would lose keys.
import { join } from 'node:path';
import { createLocalJWKSet, jwtVerify, type JWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { SecretKey } from '../../src/engine/index.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { openSubjectKeyStore } from '../../src/subjects/index.ts';
import { fakeCliIo, masterKeyHex, tempDir, veil } from '../helpers/cli-io.ts';

const TYP = 'veil-erasure-receipt+jwt';

/** A working directory whose data dir (./.veil) holds keys for the given subjects. */
async function setup(ids: string[]) {
  const cwd = await tempDir();
  const hex = masterKeyHex();
  const dataDir = join(cwd, '.veil');
  const keystore = await LocalKeystore.open({ dataDir, masterKey: SecretKey.fromBytes(Buffer.from(hex, 'hex')) });
  const store = await openSubjectKeyStore({ keystore, dataDir });
  for (const id of ids) await store.keyFor(id);
  await store.close();
  return { cwd, dataDir, hex, io: fakeCliIo(cwd, { VEIL_MASTER_KEY: hex }) };
}

async function erase(io: ReturnType<typeof fakeCliIo>, id: string): Promise<string> {
  const run = await veil(io, ['subjects', 'erase', '-', '--reason', 'Art. 17', '--by', 'dpo'], id);
  expect(run.code, run.err).toBe(0);
  return (JSON.parse(run.out) as { receipt: string }).receipt;
}

describe('veil keys export-public', () => {
  it('a JWKS of every receipt key version: jose alone verifies receipts signed before and after a rotation', async () => {
    const { dataDir, hex, io } = await setup(['a@example.org', 'b@example.org']);
    const first = await erase(io, 'a@example.org');
    const keystore = await LocalKeystore.open({ dataDir, masterKey: SecretKey.fromBytes(Buffer.from(hex, 'hex')) });
    await keystore.rotate('veil-receipts');
    const second = await erase(io, 'b@example.org');

    const run = await veil(io, ['keys', 'export-public']);
    expect(run.code, run.err).toBe(0);
    const jwks = JSON.parse(run.out) as { keys: JWK[] };
    const receiptKeys = jwks.keys.filter((k) => k.kid?.startsWith('veil-receipts.'));
    expect(receiptKeys.map((k) => k.kid).sort()).toEqual(['veil-receipts.v1', 'veil-receipts.v2']);
    for (const k of jwks.keys) {
      expect(k).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
      expect(k).not.toHaveProperty('d'); // the private scalar never leaves
    }
    const keySet = createLocalJWKSet(jwks);
    const kids: string[] = [];
    for (const receipt of [first, second]) {
      const { payload, protectedHeader } = await jwtVerify(receipt, keySet, { algorithms: ['ES256'], typ: TYP, issuer: 'urn:veil:cli' });
      expect(protectedHeader.kid).toBe(`veil-receipts.v${payload.keyVersion as number}`);
      kids.push(protectedHeader.kid!);
    }
    expect(kids).toEqual(['veil-receipts.v1', 'veil-receipts.v2']);

    // --id names one key; its versions only
    const only = await veil(io, ['keys', 'export-public', '--id', 'veil-receipts']);
    expect((JSON.parse(only.out) as { keys: JWK[] }).keys.map((k) => k.kid)).toEqual(receiptKeys.map((k) => k.kid));
    // a changed payload does not verify against the exported keys
    const [h, p, s] = second.split('.');
    const changed = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), reason: 'other' })).toString('base64url');
    await expect(jwtVerify(`${h}.${changed}.${s}`, keySet, { algorithms: ['ES256'], typ: TYP })).rejects.toThrow(/signature/);
  });

  it('a symmetric key has no public half (exit 2); an unknown one is KEY_NOT_FOUND; the output holds no secret', async () => {
    const { io, hex } = await setup(['c@example.org']);
    const symmetric = await veil(io, ['keys', 'export-public', '--id', 'veil-subjects']);
    expect(symmetric.code).toBe(2);
    expect(symmetric.err).toMatch(/only jwt-es256 keys have a public half/);
    const unknown = await veil(io, ['keys', 'export-public', '--id', 'no-such-key']);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('KEY_NOT_FOUND');
    const all = await veil(io, ['keys', 'export-public']);
    expect(all.code).toBe(0);
    expect(all.out + all.err).not.toContain(hex);
  });
});

describe('veil keys destroy-kek refuses what would lose keys', () => {
  it('with the master key: nothing to destroy (exit 2), the key set still opens', async () => {
    const { io } = await setup(['d@example.org']);
    const run = await veil(io, ['keys', 'destroy-kek']);
    expect(run.code).toBe(2);
    expect(run.err).toMatch(/a master key is removed by you/);
    expect((await veil(io, ['keys', 'list'])).code).toBe(0);
  });

  it.each([['0'], ['6'], ['31'], ['7.5'], ['x']])('--pending-days %s is a usage error', async (days) => {
    const { io } = await setup([]);
    const run = await veil(io, ['keys', 'destroy-kek', '--pending-days', days]);
    expect(run.code).toBe(2);
    expect(run.err).toMatch(/--pending-days must be a whole number from 7 to 30/);
  });
});
