import { ValueError } from '../errors.ts';
import { AesSiv, type SivPrefix } from '../crypto/aes-siv.ts';
import { revealKeyBytes } from '../keys/secret-key.ts';
import { bindingLabel, type KeyRef, type Transformer, type TransformerDeps } from './transformer.ts';
import { decode, encode, FORMAT_TAGS, fromUtf8, header, HEADER_BYTES, utf8 } from './output-format.ts';
import { VersionedKeys } from './versioned-keys.ts';

const TAG = FORMAT_TAGS['aes-siv'];
const encoder = new TextEncoder();

/**
 * Deterministic AEAD (RFC 5297): equal values of a field protect to equal outputs, so protected
 * columns still join and group. Associated data = [output header, binding label], so a value moved
 * to another field, or given another key version in its header, fails to unprotect.
 * Output: base64url(0xA1 || keyVersion u32 || V(16) || C).
 */
export function aesSiv(params: { key: KeyRef; binding?: string }, deps: TransformerDeps): Transformer {
  const keys = new VersionedKeys(params.key, deps.keys, (k) => new AesSiv(revealKeyBytes(k)));
  return {
    type: 'aes-siv',
    reversible: true,
    bind(field) {
      const label = encoder.encode(bindingLabel(field, params.binding));
      const prefixes = new Map<number, SivPrefix>();
      const prefix = (siv: AesSiv, version: number, h: Uint8Array): SivPrefix => {
        let p = prefixes.get(version);
        if (!p) prefixes.set(version, (p = siv.prefix([h, label])));
        return p;
      };
      return {
        protect(value) {
          const version = keys.protectVersion();
          const siv = keys.forProtect(version);
          const h = header(TAG, version);
          const sealed = siv.seal(prefix(siv, version, h), utf8(value));
          const out = new Uint8Array(HEADER_BYTES + sealed.length);
          out.set(h);
          out.set(sealed, HEADER_BYTES);
          return encode(out);
        },
        unprotect(value) {
          const { version, header: h, payload } = decode(value, TAG, 16);
          const siv = keys.forUnprotect(version);
          const plaintext = siv.open(prefix(siv, version, h), payload);
          if (!plaintext) throw new ValueError('PROTECTED_VALUE_INVALID', 'fails authentication (tampered, or protected for another field or key)');
          return fromUtf8(plaintext);
        },
      };
    },
  };
}
