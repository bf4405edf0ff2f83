import { createSecretKey } from 'node:crypto';
import { ValueError } from '../errors.ts';
import { gcmOpen, gcmSeal, GCM_NONCE_BYTES, GCM_TAG_BYTES } from '../crypto/aes-gcm.ts';
import { revealKeyBytes } from '../key-access/secret-key.ts';
import { bindingLabel, type KeyRef, type Transformer, type TransformerDeps } from './transformer.ts';
import { decode, encode, FORMAT_TAGS, fromUtf8, header, HEADER_BYTES, utf8 } from './output-format.ts';
import { VersionedKeys } from './versioned-keys.ts';

const TAG = FORMAT_TAGS['aes-gcm'];
const encoder = new TextEncoder();

/**
 * Randomized AEAD (AES-GCM, 96-bit random nonce): equal values protect to different outputs, so
 * nothing is learnt from equality. AAD = output header || binding label.
 * Output: base64url(0xA2 || keyVersion u32 || nonce(12) || C || tag(16)).
 * A random 96-bit nonce bounds a key to about 2^32 protections (NIST SP 800-38D §8.3): rotate.
 */
export function aesGcm(params: { key: KeyRef; binding?: string }, deps: TransformerDeps): Transformer {
  const keys = new VersionedKeys(params.key, deps.keys, (k) => createSecretKey(revealKeyBytes(k)));
  return {
    type: 'aes-gcm',
    reversible: true,
    bind(field) {
      const label = encoder.encode(bindingLabel(field, params.binding));
      const aad = (h: Uint8Array) => Buffer.concat([h, label]);
      return {
        protect(value) {
          const version = keys.protectVersion();
          const h = header(TAG, version);
          const nonce = deps.random(new Uint8Array(GCM_NONCE_BYTES));
          const sealed = gcmSeal(keys.forProtect(version), nonce, aad(h), utf8(value));
          const out = new Uint8Array(HEADER_BYTES + GCM_NONCE_BYTES + sealed.length);
          out.set(h);
          out.set(nonce, HEADER_BYTES);
          out.set(sealed, HEADER_BYTES + GCM_NONCE_BYTES);
          return encode(out);
        },
        unprotect(value) {
          const { version, header: h, payload } = decode(value, TAG, GCM_NONCE_BYTES + GCM_TAG_BYTES);
          const key = keys.forUnprotect(version);
          const plaintext = gcmOpen(key, payload.subarray(0, GCM_NONCE_BYTES), aad(h), payload.subarray(GCM_NONCE_BYTES));
          if (!plaintext) throw new ValueError('PROTECTED_VALUE_INVALID', 'fails authentication (tampered, or protected for another field or key)');
          return fromUtf8(plaintext);
        },
      };
    },
  };
}
