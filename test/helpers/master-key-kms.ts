import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { revealKeyBytes, type SecretKey } from '../../src/engine/index.ts';
import { KmsError, type Kms } from '../../src/keystore/kms/kms.ts';

const FORMAT = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const INFO = 'veil-kms/1 master-key wrap';

/**
 * The master key as a KEK, for tests that need a Kms without a KMS (veil seals the key set under
 * the master key in its own format, keystore-format.ts; an envelope's KEK is VEIL_KMS's):
 * AES-256-GCM under a key derived from it with HKDF-SHA256, a fresh 96-bit nonce per wrap, the context as additional data. Wrapped form:
 * format byte 1, nonce, ciphertext, 16-byte tag. A wrong master key, context or any changed byte
 * fails the tag: KMS_REFUSED.
 */
export function masterKeyKms(masterKey: SecretKey): Kms {
  const wrapping = () => Buffer.from(hkdfSync('sha256', revealKeyBytes(masterKey), Buffer.alloc(0), INFO, 32));
  return {
    description: 'master key (VEIL_MASTER_KEY)',
    async wrap(plaintext, context) {
      const key = wrapping();
      const nonce = randomBytes(NONCE_BYTES);
      try {
        const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
        cipher.setAAD(Buffer.from(context, 'utf8'));
        return Buffer.concat([Buffer.from([FORMAT]), nonce, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
      } finally {
        key.fill(0);
      }
    },
    async unwrap(wrapped, context) {
      if (wrapped.length < 1 + NONCE_BYTES + TAG_BYTES || wrapped[0] !== FORMAT)
        throw new KmsError('KMS_REFUSED', 'master key: the wrapped key is not in the master-key wrap format');
      const key = wrapping();
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, wrapped.subarray(1, 1 + NONCE_BYTES), { authTagLength: TAG_BYTES });
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(wrapped.subarray(wrapped.length - TAG_BYTES));
        return Buffer.concat([decipher.update(wrapped.subarray(1 + NONCE_BYTES, wrapped.length - TAG_BYTES)), decipher.final()]);
      } catch {
        throw new KmsError('KMS_REFUSED', 'master key: the wrapped key does not authenticate (another master key, another context, or modified)');
      } finally {
        key.fill(0);
      }
    },
  };
}
