import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject } from 'node:crypto';
import { ValueError } from '../errors.ts';
import { revealKeyBytes } from '../keys/secret-key.ts';
import { bindingLabel, type KeyRef, type Transformer, type TransformerDeps } from './transformer.ts';
import { decode, encode, FORMAT_TAGS, fromUtf8, header, HEADER_BYTES, utf8 } from './output-format.ts';
import { VersionedKeys } from './versioned-keys.ts';

const TAG = FORMAT_TAGS['aes-gcm'];
const NONCE = 12;
const TAG_BYTES = 16;
const encoder = new TextEncoder();

function algorithm(key: KeyObject): 'aes-128-gcm' | 'aes-192-gcm' | 'aes-256-gcm' {
  return `aes-${key.symmetricKeySize! * 8}-gcm` as 'aes-128-gcm' | 'aes-192-gcm' | 'aes-256-gcm';
}

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
          const key = keys.forProtect(version);
          const h = header(TAG, version);
          const nonce = deps.random(new Uint8Array(NONCE));
          const cipher = createCipheriv(algorithm(key), key, nonce, { authTagLength: TAG_BYTES });
          cipher.setAAD(aad(h));
          const body = Buffer.concat([cipher.update(utf8(value)), cipher.final(), cipher.getAuthTag()]);
          const out = new Uint8Array(HEADER_BYTES + NONCE + body.length);
          out.set(h);
          out.set(nonce, HEADER_BYTES);
          out.set(body, HEADER_BYTES + NONCE);
          return encode(out);
        },
        unprotect(value) {
          const { version, header: h, payload } = decode(value, TAG, NONCE + TAG_BYTES);
          const key = keys.forUnprotect(version);
          const nonce = payload.subarray(0, NONCE);
          const ct = payload.subarray(NONCE, payload.length - TAG_BYTES);
          const decipher = createDecipheriv(algorithm(key), key, nonce, { authTagLength: TAG_BYTES });
          decipher.setAAD(aad(h));
          decipher.setAuthTag(payload.subarray(payload.length - TAG_BYTES));
          try {
            return fromUtf8(new Uint8Array(Buffer.concat([decipher.update(ct), decipher.final()])));
          } catch (e) {
            if (e instanceof ValueError) throw e;
            throw new ValueError('PROTECTED_VALUE_INVALID', 'fails authentication (tampered, or protected for another field or key)');
          }
        },
      };
    },
  };
}
