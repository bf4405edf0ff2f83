import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { revealKeyBytes, SecretKey, type KeyProvider } from '../engine/index.ts';
import { KeystoreError } from './errors.ts';
import { ensureKey, type KeyCreator } from './ensure-key.ts';

/**
 * Subject keys (issue 29, crypto-shredding): one random 256-bit data key per data subject, never
 * derived from a root, wrapped under the key set's wrapping key `veil-subjects` (AES-256-GCM), so
 * under the KEK that wraps the key set (the master key, a KMS, an HSM). The subject id itself is
 * never stored: records are found by its reference, an HMAC-SHA256 under `veil-subjects-index`
 * (first 16 bytes), so neither the store nor the topic holds a subject id in clear. Key bytes stay
 * in this module: the subject-key store (src/subjects) sees wrapped bytes and SecretKey handles.
 *
 * A wrapped key is `version u32 ‖ nonce(12) ‖ ct(32) ‖ tag(16)` (64 bytes): `version` is the wrapping
 * key's; the additional data binds it to the subject's reference and its generation (the number of
 * the subject's key: a returning person after an erasure gets generation + 1), so a wrapped key copied
 * to another subject, or replayed as a later generation, does not unwrap.
 */
export const SUBJECT_WRAP_KEY = 'veil-subjects';
export const SUBJECT_INDEX_KEY = 'veil-subjects-index';
export const SUBJECT_REF_BYTES = 16;
const DATA_KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const WRAPPED_SUBJECT_KEY_BYTES = 4 + NONCE_BYTES + DATA_KEY_BYTES + TAG_BYTES;
const AD_PREFIX = Buffer.from('veil-subject-key/1\0', 'utf8');

/** What the store needs of the keystore to create them: LocalKeystore. */
export type SubjectKeySource = KeyCreator<'aes-gcm' | 'hmac-sha256'>;

/** A new subject key: its handle and its wrapped form (what is stored). */
export interface NewSubjectKey {
  key: SecretKey;
  wrapped: Buffer;
}

/**
 * Creates the wrapping and index keys in the key set when absent (the first process that needs
 * them; one that lost the race reads the winner's). The index key is used at version 1 forever
 * (rotating it would lose every subject); the wrapping key may be rotated: new subject keys are
 * wrapped under its primary version, older ones keep unwrapping under theirs.
 */
export async function ensureSubjectKeys(keystore: SubjectKeySource): Promise<void> {
  await ensureKey(keystore, SUBJECT_WRAP_KEY, 'aes-gcm');
  await ensureKey(keystore, SUBJECT_INDEX_KEY, 'hmac-sha256');
}

/** Wraps and unwraps subject keys under a key set (a KeyProvider holding the two keys above). */
export class SubjectKeyWrapper {
  private readonly keys: KeyProvider;

  constructor(keys: KeyProvider) {
    this.keys = keys;
  }

  /** The subject's reference: HMAC-SHA256(index key, id), 16 bytes. Stable for the key set's life. */
  refOf(subjectId: string): Buffer {
    const key = this.keys.key(SUBJECT_INDEX_KEY, 1);
    if (!key) throw missing(SUBJECT_INDEX_KEY);
    return createHmac('sha256', revealKeyBytes(key)).update('veil-subject-ref/1\0').update(subjectId, 'utf8').digest().subarray(0, SUBJECT_REF_BYTES);
  }

  /** A random 256-bit data key for generation `generation` of subject `ref`, wrapped under the primary wrapping key. */
  create(ref: Uint8Array, generation: number): NewSubjectKey {
    const info = this.keys.info(SUBJECT_WRAP_KEY);
    const wrapKey = info && this.keys.key(SUBJECT_WRAP_KEY, info.primary);
    if (!info || !wrapKey) throw missing(SUBJECT_WRAP_KEY);
    const dataKey = randomBytes(DATA_KEY_BYTES);
    try {
      return { key: SecretKey.fromBytes(dataKey), wrapped: seal(info.primary, wrapKey, ref, generation, dataKey) };
    } finally {
      dataKey.fill(0);
    }
  }

  /**
   * The subject key re-wrapped under the primary version of the wrapping key (the same data key,
   * new wrapped bytes), or undefined when it is wrapped under the primary already — what rotating
   * the wrapping key does to every living subject key before the older versions are destroyed.
   */
  rewrapped(ref: Uint8Array, generation: number, wrapped: Uint8Array): Buffer | undefined {
    const info = this.keys.info(SUBJECT_WRAP_KEY);
    const wrapKey = info && this.keys.key(SUBJECT_WRAP_KEY, info.primary);
    if (!info || !wrapKey) throw missing(SUBJECT_WRAP_KEY);
    if (wrapVersion(wrapped) === info.primary) return undefined;
    const dataKey = Buffer.from(revealKeyBytes(this.unwrap(ref, generation, wrapped)));
    try {
      return seal(info.primary, wrapKey, ref, generation, dataKey);
    } finally {
      dataKey.fill(0);
    }
  }

  /** The handle of a wrapped subject key; KEYSTORE_INVALID when it does not authenticate (never its bytes in a message). */
  unwrap(ref: Uint8Array, generation: number, wrapped: Uint8Array): SecretKey {
    const bytes = Buffer.from(wrapped.buffer, wrapped.byteOffset, wrapped.byteLength);
    if (bytes.length !== WRAPPED_SUBJECT_KEY_BYTES) throw invalid('has the wrong size');
    const version = bytes.readUInt32BE(0);
    const wrapKey = this.keys.key(SUBJECT_WRAP_KEY, version);
    if (!wrapKey) throw invalid(`names version ${version} of ${SUBJECT_WRAP_KEY}, which the key set does not hold`);
    const nonce = bytes.subarray(4, 4 + NONCE_BYTES);
    const sealed = bytes.subarray(4 + NONCE_BYTES, 4 + NONCE_BYTES + DATA_KEY_BYTES);
    let dataKey: Buffer | undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', revealKeyBytes(wrapKey), nonce, { authTagLength: TAG_BYTES });
      decipher.setAAD(additionalData(bytes.subarray(0, 4), ref, generation));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      dataKey = Buffer.concat([decipher.update(sealed), decipher.final()]);
      return SecretKey.fromBytes(dataKey);
    } catch {
      throw invalid('fails authentication (damaged, or moved from another subject or generation)');
    } finally {
      dataKey?.fill(0);
    }
  }
}

/** The version of the wrapping key a wrapped subject key names (its first 4 bytes). */
export function wrapVersion(wrapped: Uint8Array): number {
  return Buffer.from(wrapped.buffer, wrapped.byteOffset, wrapped.byteLength).readUInt32BE(0);
}

/** `version u32 ‖ nonce ‖ AES-256-GCM(dataKey) ‖ tag`, bound to the subject and generation. */
function seal(version: number, wrapKey: SecretKey, ref: Uint8Array, generation: number, dataKey: Buffer): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(version);
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', revealKeyBytes(wrapKey), nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(additionalData(header, ref, generation));
  return Buffer.concat([header, nonce, cipher.update(dataKey), cipher.final(), cipher.getAuthTag()]);
}

/** An identifier of destroyed wrapped key material, for a receipt: SHA-256 of the wrapped bytes (never the key). */
export function wrappedKeyId(wrapped: Uint8Array): string {
  return createHash('sha256').update(wrapped).digest('hex');
}

function additionalData(header: Uint8Array, ref: Uint8Array, generation: number): Buffer {
  const gen = Buffer.alloc(4);
  gen.writeUInt32BE(generation);
  return Buffer.concat([AD_PREFIX, header, ref, gen]);
}

function missing(id: string): KeystoreError {
  return new KeystoreError('KEY_NOT_FOUND', `the key set holds no ${id} key (subject keys need it: ensureSubjectKeys creates it)`);
}

function invalid(what: string): KeystoreError {
  return new KeystoreError('KEYSTORE_INVALID', `a wrapped subject key ${what}`);
}
