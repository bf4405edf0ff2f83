import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { revealKeyBytes, SecretKey } from '../../src/engine/index.ts';
import { encodeKeystore } from '../../src/keystore/keystore-format.ts';
import { encodeEnvelope } from '../../src/keystore/keyset-envelope.ts';
import { opensUnder } from '../../src/keystore/keyset-open.ts';
import { KmsError, type Kms } from '../../src/keystore/kms/kms.ts';
import { masterKeyKms } from '../helpers/master-key-kms.ts';
import { FIXED_NOW, randomMasterKey } from './helpers.ts';

/** A key set's shape, its ciphertext made up. */
function forgedDocument(like: Buffer): Buffer {
  const value = JSON.parse(like.toString()) as Record<string, unknown>;
  value.ciphertext = randomBytes(200).toString('base64');
  return Buffer.from(`${JSON.stringify(value, null, 2)}\n`);
}

describe('opensUnder', () => {
  const kek = (fill: number): Kms => masterKeyKms(SecretKey.fromBytes(new Uint8Array(32).fill(fill)));
  const records = () => [
    {
      id: 'k1',
      type: 'aes-gcm' as const,
      primary: 1,
      versions: [{ version: 1, createdAt: FIXED_NOW.toISOString(), origin: 'generated' as const, material: new Uint8Array(32).fill(9) }],
    },
  ];

  it('true for a key set under this KEK, in either format; false for another KEK, a damaged one, or a format this process has no KEK for', async () => {
    const master = randomMasterKey();
    const plain = encodeKeystore(records(), revealKeyBytes(master));
    const envelope = await encodeEnvelope(records(), kek(1));
    expect(await opensUnder(plain, { masterKey: master })).toBe(true);
    expect(await opensUnder(envelope, { kms: kek(1) })).toBe(true);
    expect(await opensUnder(plain, { masterKey: randomMasterKey() })).toBe(false);
    expect(await opensUnder(envelope, { kms: kek(2) })).toBe(false);
    expect(await opensUnder(forgedDocument(envelope), { kms: kek(1) })).toBe(false);
    expect(await opensUnder(Buffer.from('{"format":'), { kms: kek(1), masterKey: master })).toBe(false);
    expect(await opensUnder(envelope, { masterKey: master })).toBe(false);
    expect(await opensUnder(plain, { kms: kek(1) })).toBe(false);
  });

  it('a KEK that cannot answer now throws its retriable error rather than calling the key set forged', async () => {
    const envelope = await encodeEnvelope(records(), kek(1));
    const down: Kms = {
      description: 'down',
      wrap: async () => new Uint8Array(),
      unwrap: async () => {
        throw new KmsError('KMS_UNAVAILABLE', 'unreachable');
      },
    };
    await expect(opensUnder(envelope, { kms: down })).rejects.toMatchObject({ code: 'KMS_UNAVAILABLE', retriable: true });
  });
});
