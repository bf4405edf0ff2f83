import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

import { base64, recordsFromPlaintext, recordsToPlaintext, type KeyRecord } from './keystore-format.ts';
import type { Kms } from './kms/kms.ts';
import { KeystoreError } from './errors.ts';

/**
 * The key set under envelope encryption, format `veil-keyset` version 1: the key list (the JSON
 * the v1 keystore encrypts) under a fresh data key (AES-256-GCM), the data key wrapped by the KEK
 * (a Kms: AWS KMS, an HSM). One canonical JSON form (2-space indent, fixed key
 * order, trailing newline):
 *
 *   { format: "veil-keyset", version: 1, cipher: "aes-256-gcm", kek: <the KEK's description>,
 *     wrappedKey: <the KEK's wrap of the data key>, nonce: <12 bytes>, ciphertext: <ct || tag> }
 *
 * The additional data is `{format, version, cipher, nonce}` — not the KEK fields, so rotating the
 * KEK (rewrapEnvelope) replaces `kek` and `wrappedKey` and leaves nonce and ciphertext, and every
 * key and every protected value, as they were. A wrapped key swapped for another unwraps to
 * another data key, which fails the tag. The KEK binds the wrap to the context DATA_KEY_CONTEXT.
 */
export const KEYSET_FORMAT = 'veil-keyset';
const VERSION = 1;
const CIPHER = 'aes-256-gcm';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const DATA_KEY_CONTEXT = 'veil-keyset/1 data key';

interface Envelope {
  kek: string;
  wrappedKey: Buffer;
  nonce: Buffer;
  sealed: Buffer;
}

/** Whether keystore bytes are in this format (else the master-key format of keystore-format.ts). */
export function isEnvelope(bytes: Uint8Array): boolean {
  return Buffer.from(bytes.subarray(0, 64)).toString('utf8').includes(`"format": "${KEYSET_FORMAT}"`);
}

export async function encodeEnvelope(records: readonly KeyRecord[], kms: Kms): Promise<Buffer> {
  const dataKey = randomBytes(32);
  const nonce = randomBytes(NONCE_BYTES);
  const plaintext = recordsToPlaintext(records);
  try {
    const cipher = createCipheriv(CIPHER, dataKey, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(nonce));
    const sealed = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    const wrappedKey = Buffer.from(await kms.wrap(dataKey, DATA_KEY_CONTEXT));
    return serialize({ kek: kms.description, wrappedKey, nonce, sealed });
  } finally {
    dataKey.fill(0);
    plaintext.fill(0);
  }
}

/** Authenticates and decrypts; a defect is KEYSTORE_INVALID, a KEK failure the Kms's own error. */
export async function decodeEnvelope(bytes: Uint8Array, kms: Kms, path: string): Promise<KeyRecord[]> {
  const envelope = parse(bytes, path);
  const dataKey = Buffer.from(await kms.unwrap(envelope.wrappedKey, DATA_KEY_CONTEXT));
  let plaintext: Buffer;
  try {
    plaintext = open(envelope, dataKey, path);
  } finally {
    dataKey.fill(0);
  }
  try {
    const records = recordsFromPlaintext(plaintext);
    if (!records) throw new KeystoreError('KEYSTORE_INVALID', `keystore ${path} is authentic but its content is not understood by this veil version`);
    return records;
  } finally {
    plaintext.fill(0);
  }
}

/** The wrapped data key of envelope bytes (public: a KEK's output), for a lease to unwrap again. */
export function wrappedKeyOf(bytes: Uint8Array, path: string): Buffer {
  return parse(bytes, path).wrappedKey;
}

/**
 * The same key set under another KEK: the data key unwrapped by `from`, checked against the
 * ciphertext, wrapped by `to`. Nonce and ciphertext are kept byte for byte.
 */
export async function rewrapEnvelope(bytes: Uint8Array, from: Kms, to: Kms, path: string): Promise<Buffer> {
  const envelope = parse(bytes, path);
  const dataKey = Buffer.from(await from.unwrap(envelope.wrappedKey, DATA_KEY_CONTEXT));
  try {
    open(envelope, dataKey, path).fill(0);
    const wrappedKey = Buffer.from(await to.wrap(dataKey, DATA_KEY_CONTEXT));
    return serialize({ ...envelope, kek: to.description, wrappedKey });
  } finally {
    dataKey.fill(0);
  }
}

function aad(nonce: Buffer): Buffer {
  return Buffer.from(JSON.stringify({ format: KEYSET_FORMAT, version: VERSION, cipher: CIPHER, nonce: nonce.toString('base64') }), 'utf8');
}

function open(envelope: Envelope, dataKey: Buffer, path: string): Buffer {
  try {
    const decipher = createDecipheriv(CIPHER, dataKey, envelope.nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad(envelope.nonce));
    decipher.setAuthTag(envelope.sealed.subarray(envelope.sealed.length - TAG_BYTES));
    return Buffer.concat([decipher.update(envelope.sealed.subarray(0, envelope.sealed.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new KeystoreError('KEYSTORE_INVALID', `keystore ${path} failed authentication: it was damaged or modified; restore it from a backup`);
  }
}

function serialize(e: Envelope): Buffer {
  const file = {
    format: KEYSET_FORMAT,
    version: VERSION,
    cipher: CIPHER,
    kek: e.kek,
    wrappedKey: e.wrappedKey.toString('base64'),
    nonce: e.nonce.toString('base64'),
    ciphertext: e.sealed.toString('base64'),
  };
  return Buffer.from(`${JSON.stringify(file, null, 2)}\n`, 'utf8');
}

const FIELDS = ['format', 'version', 'cipher', 'kek', 'wrappedKey', 'nonce', 'ciphertext'];

/** The envelope, accepted only in its canonical form with known format, version and cipher. */
function parse(bytes: Uint8Array, path: string): Envelope {
  const damaged = (detail: string) =>
    new KeystoreError('KEYSTORE_INVALID', `keystore ${path} is not a valid veil key set (${detail}): it was damaged or modified; restore it from a backup`);
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as Record<string, unknown>;
  } catch {
    throw damaged('not UTF-8 JSON');
  }
  if (typeof value !== 'object' || value === null || Object.keys(value).join() !== FIELDS.join()) throw damaged('unexpected structure');
  if (value.format !== KEYSET_FORMAT || value.version !== VERSION || value.cipher !== CIPHER) throw damaged('unknown format, version or cipher');
  if (typeof value.kek !== 'string' || typeof value.wrappedKey !== 'string' || typeof value.nonce !== 'string' || typeof value.ciphertext !== 'string')
    throw damaged('unexpected structure');
  const wrappedKey = base64(value.wrappedKey);
  const nonce = base64(value.nonce, NONCE_BYTES);
  const sealed = base64(value.ciphertext);
  if (!wrappedKey || !nonce || !sealed || sealed.length < TAG_BYTES) throw damaged('malformed binary field');
  const envelope = { kek: value.kek, wrappedKey, nonce, sealed };
  if (!serialize(envelope).equals(Buffer.from(bytes))) throw damaged('not in canonical form');
  return envelope;
}
