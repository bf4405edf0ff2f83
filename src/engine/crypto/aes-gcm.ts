import { createCipheriv, createDecipheriv, type KeyObject } from 'node:crypto';

export const GCM_NONCE_BYTES = 12;
export const GCM_TAG_BYTES = 16;

type GcmAlgorithm = 'aes-128-gcm' | 'aes-192-gcm' | 'aes-256-gcm';

function algorithm(key: KeyObject): GcmAlgorithm {
  const bits = (key.symmetricKeySize ?? 0) * 8;
  if (bits !== 128 && bits !== 192 && bits !== 256) throw new RangeError('AES-GCM key must be 16, 24 or 32 bytes');
  return `aes-${bits}-gcm` as GcmAlgorithm;
}

function checkParams(nonce: Uint8Array): void {
  // veil supports exactly one parameter set: 96-bit nonce, 128-bit tag (SP 800-38D's recommended)
  if (nonce.length !== GCM_NONCE_BYTES) throw new RangeError('AES-GCM nonce must be 96 bits');
}

/** AES-GCM over node:crypto (OpenSSL); returns C || tag. */
export function gcmSeal(key: KeyObject, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array {
  checkParams(nonce);
  const cipher = createCipheriv(algorithm(key), key, nonce, { authTagLength: GCM_TAG_BYTES });
  cipher.setAAD(aad);
  return new Uint8Array(Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]));
}

/** Opens C || tag; undefined when authentication fails. */
export function gcmOpen(key: KeyObject, nonce: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Uint8Array | undefined {
  checkParams(nonce);
  if (sealed.length < GCM_TAG_BYTES) return undefined;
  const decipher = createDecipheriv(algorithm(key), key, nonce, { authTagLength: GCM_TAG_BYTES });
  decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(sealed.length - GCM_TAG_BYTES));
  try {
    return new Uint8Array(Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - GCM_TAG_BYTES)), decipher.final()]));
  } catch {
    return undefined;
  }
}
