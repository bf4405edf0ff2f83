import { createSecretKey, type KeyObject } from 'node:crypto';
import { hmacSha256 as mac } from '../crypto/hmac-sha256.ts';
import { revealKeyBytes } from '../key-access/secret-key.ts';
import { bindingLabel, type KeyRef, type Transformer, type TransformerDeps } from './transformer.ts';
import { encode, FORMAT_TAGS, header, HEADER_BYTES, irreversible, utf8 } from './output-format.ts';
import { keyVersions } from './versioned-keys.ts';

const TAG = FORMAT_TAGS['hmac-sha256'];

/**
 * Keyed pseudonym: HMAC-SHA256 over header || len(label) u16 || label || value, truncated to
 * outputBytes. Irreversible; stable for a key version, so pseudonyms join. Without the key a
 * pseudonym cannot be recomputed from a guessed value (unlike a plain hash of a low-entropy field).
 * Output: base64url(0xA3 || keyVersion u32 || tag).
 */
export function hmacSha256(params: { key: KeyRef; outputBytes: number; binding?: string }, deps: TransformerDeps): Transformer {
  const keys = keyVersions<KeyObject>(params.key, deps, (k) => createSecretKey(revealKeyBytes(k)));
  return {
    type: 'hmac-sha256',
    reversible: false,
    bind(field) {
      const label = new TextEncoder().encode(bindingLabel(field, params.binding));
      const labelLength = new Uint8Array([label.length >>> 8, label.length & 0xff]);
      return {
        protect(value) {
          const version = keys.protectVersion();
          const h = header(TAG, version);
          const tag = mac(keys.forProtect(version), [h, labelLength, label, utf8(value)], params.outputBytes);
          const out = new Uint8Array(HEADER_BYTES + tag.length);
          out.set(h);
          out.set(tag, HEADER_BYTES);
          return encode(out);
        },
        unprotect: () => irreversible('hmac-sha256'),
      };
    },
  };
}
