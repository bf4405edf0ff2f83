import { readFile } from 'node:fs/promises';
import { provisionKeys } from '../../src/keystore/config-keys.ts';
import { describe, expect, it } from 'vitest';
import { Engine, SecretKey } from '../../src/engine/index.ts';
import { KeyLease } from '../../src/keystore/key-lease.ts';
import { decodeEnvelope, encodeEnvelope, isEnvelope, rewrapEnvelope } from '../../src/keystore/keyset-envelope.ts';
import { KmsError, type Kms } from '../../src/keystore/kms/kms.ts';
import { masterKeyKms } from '../helpers/master-key-kms.ts';
import { KEYSTORE_FILE, LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { compileOrFail, EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';
import { FIXED_NOW, randomMasterKey, tempDir, veilError } from './helpers.ts';

const kekA = () => masterKeyKms(SecretKey.fromBytes(new Uint8Array(32).fill(1)));
const kekB = () => masterKeyKms(SecretKey.fromBytes(new Uint8Array(32).fill(2)));
const records = () => [
  {
    id: 'k1',
    type: 'aes-gcm' as const,
    primary: 1,
    versions: [{ version: 1, createdAt: FIXED_NOW.toISOString(), origin: 'generated' as const, material: new Uint8Array(32).fill(9) }],
  },
];

describe('keyset envelope', () => {
  it('round-trips under a KEK, in one canonical form, and refuses any changed byte', async () => {
    const bytes = await encodeEnvelope(records(), kekA());
    expect(isEnvelope(bytes)).toBe(true);
    expect(bytes.toString()).not.toContain(Buffer.from(new Uint8Array(32).fill(9)).toString('base64'));
    expect((await decodeEnvelope(bytes, kekA(), 'ks'))[0]!.versions[0]!.material).toEqual(new Uint8Array(32).fill(9));
    await expect(decodeEnvelope(bytes, kekB(), 'ks')).rejects.toMatchObject({ code: 'KMS_REFUSED' });
    const text = bytes.toString();
    await expect(decodeEnvelope(Buffer.from(text.replace('\n}', ' \n}')), kekA(), 'ks')).rejects.toMatchObject({ code: 'KEYSTORE_INVALID' });
    // every byte of the ciphertext and nonce is covered
    const value = JSON.parse(text) as Record<string, string>;
    for (const field of ['ciphertext', 'nonce', 'wrappedKey']) {
      const raw = Buffer.from(value[field]!, 'base64');
      raw[raw.length - 1]! ^= 1;
      const changed = Buffer.from(`${JSON.stringify({ ...value, [field]: raw.toString('base64') }, null, 2)}\n`);
      await expect(decodeEnvelope(changed, kekA(), 'ks')).rejects.toThrow();
    }
  });

  it('rewrap changes only the KEK fields: nonce and ciphertext stay byte for byte, the old KEK no longer opens it', async () => {
    const bytes = await encodeEnvelope(records(), kekA());
    const rewrapped = await rewrapEnvelope(bytes, kekA(), kekB(), 'ks');
    const [before, after] = [JSON.parse(bytes.toString()), JSON.parse(rewrapped.toString())] as Record<string, string>[];
    expect(after!.nonce).toBe(before!.nonce);
    expect(after!.ciphertext).toBe(before!.ciphertext);
    expect(after!.wrappedKey).not.toBe(before!.wrappedKey);
    expect((await decodeEnvelope(rewrapped, kekB(), 'ks'))[0]!.id).toBe('k1');
    await expect(decodeEnvelope(rewrapped, kekA(), 'ks')).rejects.toMatchObject({ code: 'KMS_REFUSED' });
    await expect(rewrapEnvelope(bytes, kekB(), kekA(), 'ks')).rejects.toMatchObject({ code: 'KMS_REFUSED' });
  });
});

const PROTECT_EMAIL = {
  identity: { roles: ['ingest'] },
  rightsEvidences: [{ name: 'Role', value: 'ingest' }],
  processingEvidences: [{ name: 'Action', value: 'Protect' }],
  fields: [{ className: 'Customer', propertyName: 'email' }],
};

describe('LocalKeystore under a Kms', () => {
  it('writes the envelope format, needs the Kms to read it, and keeps every key across a master-key → KMS → KMS rewrap', async () => {
    const dataDir = await tempDir();
    const master = randomMasterKey();
    const config = compileOrFail(EXAMPLE_CONFIG_TEXT);
    const legacy = await LocalKeystore.open({ dataDir, masterKey: master, now: () => FIXED_NOW });
    await provisionKeys(config, legacy);
    // Customer.email is AES-SIV: deterministic, so the same key protects a value the same way
    const email = (ks: LocalKeystore) => new Engine({ config, keys: ks }).bind(PROTECT_EMAIL).transforms[0]!('ada@example.com');
    const before = email(legacy);
    const file = `${dataDir}/${KEYSTORE_FILE}`;
    expect(isEnvelope(await readFile(file))).toBe(false);

    // with a KMS and the master key: the master-key file is read, then rewrapped under the KMS
    const withBoth = await LocalKeystore.open({ dataDir, masterKey: master, kms: kekA(), now: () => FIXED_NOW });
    await withBoth.rewrap(kekA());
    expect(isEnvelope(await readFile(file))).toBe(true);
    await veilError(() => LocalKeystore.open({ dataDir, masterKey: master }), 'KEYSTORE_INVALID');
    const underA = await LocalKeystore.open({ dataDir, kms: kekA() });
    expect(email(underA)).toBe(before);
    await underA.rewrap(kekB());
    await expect(LocalKeystore.open({ dataDir, kms: kekA() })).rejects.toMatchObject({ code: 'KMS_REFUSED' });
    const underB = await LocalKeystore.open({ dataDir, kms: kekB() });
    expect(email(underB)).toBe(before);
    // a change under the new KEK is written as an envelope under it
    await underB.create('spare', 'aes-gcm');
    expect((await LocalKeystore.open({ dataDir, kms: kekB() })).info('spare')?.type).toBe('aes-gcm');
    expect(JSON.parse(await readFile(file, 'utf8')).kek).toBe(kekB().description);
  });
});

/** a Kms the test switches off and on */
function switchable(inner: Kms): Kms & { down: boolean } {
  const k = {
    description: 'test KMS',
    down: false,
    wrap: (p: Uint8Array, c: string) => inner.wrap(p, c),
    unwrap: async (w: Uint8Array, c: string) => {
      if (k.down) throw new KmsError('KMS_UNAVAILABLE', 'test KMS down');
      return inner.unwrap(w, c);
    },
  };
  return k;
}

describe('KeyLease: fail closed after the lifetime, recover by itself', () => {
  it('keeps keys usable while the KEK answers and for ttl after it stops, then refuses every transform with KMS_UNAVAILABLE; the next answer restores them', async () => {
    const dataDir = await tempDir();
    const kms = switchable(kekA());
    let now = 1_000;
    const keystore = await LocalKeystore.open({ dataDir, kms, now: () => FIXED_NOW });
    const config = compileOrFail(EXAMPLE_CONFIG_TEXT);
    await provisionKeys(config, keystore);
    const changes: string[] = [];
    const lease = new KeyLease({
      kms,
      wrapped: () => keystore.wrappedDataKey(),
      ttlMs: 10_000,
      now: () => now,
      onChange: (valid, reason) => changes.push(`${valid}:${reason ?? ''}`),
    });
    keystore.useLease(lease);
    const engine = new Engine({ config, keys: keystore });
    const { transforms } = engine.bind(PROTECT_EMAIL);
    const protect = transforms[0]!;
    const first = protect('ada@example.com');

    kms.down = true;
    now += 5_000;
    expect(await lease.renew()).toBe(false);
    expect(protect('ada@example.com')).toBe(first); // within the lifetime: served
    expect(lease.status().valid).toBe(true);
    now += 5_000;
    await lease.renew();
    expect(() => protect('ada@example.com')).toThrow(expect.objectContaining({ code: 'KMS_UNAVAILABLE', retriable: true }));
    // what a caller reads does not name the KMS or its key (the log does)
    expect(() => protect('ada@example.com')).toThrow(expect.not.objectContaining({ message: expect.stringContaining('test KMS') }));
    expect(() => protect.many(['a@b.c'])).toThrow(expect.objectContaining({ code: 'KMS_UNAVAILABLE' }));
    expect(lease.status()).toMatchObject({ valid: false, reason: 'KMS_UNAVAILABLE', kek: 'test KMS' });
    expect(changes).toEqual(['false:KMS_UNAVAILABLE']);

    kms.down = false;
    expect(await lease.renew()).toBe(true);
    expect(protect('ada@example.com')).toBe(first);
    expect(changes).toEqual(['false:KMS_UNAVAILABLE', 'true:']);
  });
});
