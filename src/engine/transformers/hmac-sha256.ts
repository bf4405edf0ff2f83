import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { revealKeyBytes } from '../keys/secret-key.ts';
import { bindingLabel, type KeyRef, type Transformer, type TransformerDeps } from './transformer.ts';
import { encode, FORMAT_TAGS, header, HEADER_BYTES, irreversible, utf8 } from './output-format.ts';
import { VersionedKeys } from './versioned-keys.ts';

const TAG = FORMAT_TAGS['hmac-sha256'];

/**
 * Keyed pseudonym: HMAC-SHA256 over header || len(label) u16 || label || value, truncated to
 * outputBytes. Irreversible; stable for a key version, so pseudonyms join. Without the key a
 * pseudonym cannot be recomputed from a guessed value (unlike a plain hash of a low-entropy field).
 * Output: base64url(0xA3 || keyVersion u32 || tag).
 */
export function hmacSha256(params: { key: KeyRef; outputBytes: number; binding?: string }, deps: TransformerDeps): Transformer {
  const keys = new VersionedKeys<KeyObject>(params.key, deps.keys, (k) => createSecretKey(revealKeyBytes(k)));
  return {
    type: 'hmac-sha256',
    reversible: false,
    bind(field) {
      const label = Buffer.from(bindingLabel(field, params.binding), 'utf8');
      const labelLength = Buffer.alloc(2);
      labelLength.writeUInt16BE(label.length);
      return {
        protect(value) {
          const version = keys.protectVersion();
          const h = header(TAG, version);
          const mac = createHmac('sha256', keys.forProtect(version)).update(h).update(labelLength).update(label).update(utf8(value)).digest();
          const out = new Uint8Array(HEADER_BYTES + params.outputBytes);
          out.set(h);
          out.set(mac.subarray(0, params.outputBytes), HEADER_BYTES);
          return encode(out);
        },
        unprotect: () => irreversible('hmac-sha256'),
      };
    },
  };
}
