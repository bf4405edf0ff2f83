import { CreateKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretKey } from '../../../src/engine/index.ts';
import { awsKms } from '../../../src/keystore/kms/aws-kms.ts';
import { cachingKms, retryingKms } from '../../../src/keystore/kms/kms-decorators.ts';
import type { Kms } from '../../../src/keystore/kms/kms.ts';
import { masterKeyKms } from '../../helpers/master-key-kms.ts';
import { pkcs11Kms } from '../../../src/keystore/kms/pkcs11-kms.ts';
import { startMoto, type Moto } from '../../helpers/moto.ts';
import { softHsmToken, type SoftHsm } from '../../helpers/softhsm.ts';

const dataKey = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);
const CREDENTIALS = { accessKeyId: 'testing', secretAccessKey: 'testing' };

/** what every KEK adapter must do, whatever holds the key */
async function expectEnvelope(kms: Kms): Promise<Uint8Array> {
  const wrapped = await kms.wrap(dataKey, 'veil/keyset/7');
  expect(Buffer.from(wrapped).includes(Buffer.from(dataKey))).toBe(false);
  expect(Buffer.from(await kms.unwrap(wrapped, 'veil/keyset/7'))).toEqual(Buffer.from(dataKey));
  await expect(kms.unwrap(wrapped, 'veil/keyset/8')).rejects.toMatchObject({ code: 'KMS_REFUSED', retriable: false });
  const tampered = Uint8Array.from(wrapped);
  tampered[tampered.length - 1]! ^= 0x40;
  await expect(kms.unwrap(tampered, 'veil/keyset/7')).rejects.toMatchObject({ code: 'KMS_REFUSED' });
  return wrapped;
}

describe('KEK adapters against real key services', () => {
  let moto: Moto;
  let hsm: SoftHsm;
  let awsKeyId: string;

  beforeAll(async () => {
    moto = await startMoto();
    const admin = new KMSClient({ region: 'eu-west-1', endpoint: moto.endpoint, credentials: CREDENTIALS });
    awsKeyId = (await admin.send(new CreateKeyCommand({ Description: 'veil test KEK' }))).KeyMetadata!.KeyId!;
    admin.destroy();
    hsm = await softHsmToken();
    hsm.createAesKey('veil-kek-1');
    hsm.createAesKey('veil-kek-2');
  }, 180_000);
  afterAll(async () => {
    await moto?.stop();
    await hsm?.dispose();
  });

  it('AWS KMS (moto_server): wraps under the key with the context bound; a wrong context, changed bytes or an unknown key are refused', async () => {
    const kms = awsKms({ keyId: awsKeyId, region: 'eu-west-1', endpoint: moto.endpoint, credentials: CREDENTIALS });
    await expectEnvelope(kms);
    const unknown = awsKms({ keyId: '11111111-2222-3333-4444-555555555555', region: 'eu-west-1', endpoint: moto.endpoint, credentials: CREDENTIALS });
    const error = await unknown.wrap(dataKey, 'c').catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'KMS_REFUSED' });
    expect((error as Error).message).toMatch(/AWS KMS 11111111-2222-3333-4444-555555555555: Encrypt failed \(NotFoundException/);
    await kms.close?.();
    await unknown.close?.();
  });

  it('AWS KMS unreachable: retriable KMS_UNAVAILABLE; the cache serves what it unwrapped for its lifetime, then refuses; all recovers when the KMS is back', async () => {
    let now = 0;
    const direct = awsKms({ keyId: awsKeyId, region: 'eu-west-1', endpoint: moto.endpoint, credentials: CREDENTIALS, timeoutMs: 400 });
    const kms = cachingKms(retryingKms(direct, { attempts: 2, baseDelayMs: 10 }), { ttlMs: 60_000, now: () => now });
    const wrapped = await kms.wrap(dataKey, 'c');
    expect(Buffer.from(await kms.unwrap(wrapped, 'c'))).toEqual(Buffer.from(dataKey));
    moto.pause();
    try {
      now = 59_999;
      expect(Buffer.from(await kms.unwrap(wrapped, 'c'))).toEqual(Buffer.from(dataKey));
      now = 60_000;
      await expect(kms.unwrap(wrapped, 'c')).rejects.toMatchObject({ code: 'KMS_UNAVAILABLE', retriable: true });
      await expect(direct.wrap(dataKey, 'c')).rejects.toMatchObject({ code: 'KMS_UNAVAILABLE' });
    } finally {
      moto.resume();
    }
    expect(Buffer.from(await kms.unwrap(wrapped, 'c'))).toEqual(Buffer.from(dataKey));
    await kms.close?.();
  }, 60_000);

  it('PKCS#11 (SoftHSM2): AES-GCM inside the token; a wrong PIN, another key label, a missing key or token are refused', async () => {
    // first, before any session of this process is logged in (a PKCS#11 login is the process's)
    const badPin = pkcs11Kms({ library: hsm.library, tokenLabel: hsm.tokenLabel, pin: '000000', keyLabel: 'veil-kek-1' });
    const error = await badPin.wrap(dataKey, 'c').catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'KMS_REFUSED' });
    expect((error as Error).message).toMatch(/CKR_PIN_INCORRECT/);
    expect((error as Error).message).not.toContain('000000');
    await badPin.close?.();
    const kms = pkcs11Kms({ library: hsm.library, tokenLabel: hsm.tokenLabel, pin: hsm.pin, keyLabel: 'veil-kek-1' });
    const wrapped = await expectEnvelope(kms);
    const other = pkcs11Kms({ library: hsm.library, tokenLabel: hsm.tokenLabel, pin: hsm.pin, keyLabel: 'veil-kek-2' });
    await expect(other.unwrap(wrapped, 'veil/keyset/7')).rejects.toMatchObject({ code: 'KMS_REFUSED' });
    const missing = pkcs11Kms({ library: hsm.library, tokenLabel: hsm.tokenLabel, pin: hsm.pin, keyLabel: 'no-such-key' });
    await expect(missing.wrap(dataKey, 'c')).rejects.toThrow(/holds no secret key labelled no-such-key/);
    const noToken = pkcs11Kms({ library: hsm.library, tokenLabel: 'absent', pin: hsm.pin, keyLabel: 'veil-kek-1' });
    await expect(noToken.wrap(dataKey, 'c')).rejects.toMatchObject({ code: 'KMS_UNAVAILABLE' });
    // after all those refusals the first still works
    expect(Buffer.from(await kms.unwrap(wrapped, 'veil/keyset/7'))).toEqual(Buffer.from(dataKey));
    for (const k of [other, missing, noToken, kms]) await k.close?.();
  });

  it('rotating the KEK rewraps the data key and leaves it as it was: master key → AWS KMS → PKCS#11 → master key', async () => {
    const master = masterKeyKms(SecretKey.fromBytes(new Uint8Array(32).fill(3)));
    const aws = awsKms({ keyId: awsKeyId, region: 'eu-west-1', endpoint: moto.endpoint, credentials: CREDENTIALS });
    const hsmKms = pkcs11Kms({ library: hsm.library, tokenLabel: hsm.tokenLabel, pin: hsm.pin, keyLabel: 'veil-kek-2' });
    let wrapped = await master.wrap(dataKey, 'k');
    let holder: Kms = master;
    for (const next of [aws, hsmKms, master]) {
      wrapped = await next.wrap(await holder.unwrap(wrapped, 'k'), 'k');
      holder = next;
    }
    expect(Buffer.from(await holder.unwrap(wrapped, 'k'))).toEqual(Buffer.from(dataKey));
    await aws.close?.();
    await hsmKms.close?.();
  });
});
