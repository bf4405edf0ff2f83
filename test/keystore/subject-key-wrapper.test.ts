import { afterEach, describe, expect, it } from 'vitest';
import { revealKeyBytes, VeilError } from '../../src/engine/index.ts';
import {
  ensureSubjectKeys,
  SUBJECT_INDEX_KEY,
  SUBJECT_WRAP_KEY,
  SubjectKeyWrapper,
  wrappedKeyId,
  WRAPPED_SUBJECT_KEY_BYTES,
} from '../../src/keystore/subject-key-wrapper.ts';
import { cleanup, keystoreIn, tempDir } from '../subjects/helpers.ts';

afterEach(cleanup);

describe('subject keys in the keystore: random, wrapped by the key set, bytes only behind handles', () => {
  it('creates the wrapping and index keys once; a second process adopts them', async () => {
    const dir = await tempDir();
    const a = await keystoreIn(dir);
    await ensureSubjectKeys(a);
    expect([a.info(SUBJECT_WRAP_KEY)?.type, a.info(SUBJECT_INDEX_KEY)?.type]).toEqual(['aes-gcm', 'hmac-sha256']);
    await ensureSubjectKeys(a);
    expect(a.info(SUBJECT_WRAP_KEY)?.versions.length).toBe(1);
  });

  it('a new key is random per call, unwraps to the same bytes, and its wrapped form does not hold them', async () => {
    const keystore = await keystoreIn(await tempDir());
    await ensureSubjectKeys(keystore);
    const wrapper = new SubjectKeyWrapper(keystore);
    const ref = wrapper.refOf('alice@example.com');
    const one = wrapper.create(ref, 1);
    const two = wrapper.create(ref, 1);
    const bytes = Buffer.from(revealKeyBytes(one.key));
    expect(bytes.length).toBe(32);
    expect(bytes.equals(Buffer.from(revealKeyBytes(two.key)))).toBe(false);
    expect(one.wrapped.length).toBe(WRAPPED_SUBJECT_KEY_BYTES);
    expect(one.wrapped.includes(bytes)).toBe(false);
    expect(Buffer.from(revealKeyBytes(wrapper.unwrap(ref, 1, one.wrapped))).equals(bytes)).toBe(true);
    expect(String(one.key)).toBe('[SecretKey]');
    expect(wrappedKeyId(one.wrapped)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a wrapped key moved to another subject or generation, or altered, does not unwrap (KEYSTORE_INVALID, no bytes in the message)', async () => {
    const keystore = await keystoreIn(await tempDir());
    await ensureSubjectKeys(keystore);
    const wrapper = new SubjectKeyWrapper(keystore);
    const ref = wrapper.refOf('alice');
    const { wrapped } = wrapper.create(ref, 1);
    const altered = Buffer.from(wrapped);
    altered[20]! ^= 1;
    for (const [r, gen, w] of [
      [wrapper.refOf('bob'), 1, wrapped],
      [ref, 2, wrapped],
      [ref, 1, altered],
      [ref, 1, wrapped.subarray(1)],
    ] as const) {
      const error = (() => {
        try {
          wrapper.unwrap(r, gen, w);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(VeilError);
      expect((error as VeilError).code).toBe('KEYSTORE_INVALID');
      expect((error as VeilError).message).not.toContain(wrapped.toString('hex').slice(8, 24));
    }
  });

  it('references are keyed: stable for a key set, different under another, and never the id', async () => {
    const a = await keystoreIn(await tempDir());
    const b = await keystoreIn(await tempDir());
    await ensureSubjectKeys(a);
    await ensureSubjectKeys(b);
    const wa = new SubjectKeyWrapper(a);
    expect(wa.refOf('alice').equals(wa.refOf('alice'))).toBe(true);
    expect(wa.refOf('alice').equals(new SubjectKeyWrapper(b).refOf('alice'))).toBe(false);
    expect(wa.refOf('alice').length).toBe(16);
  });
});
