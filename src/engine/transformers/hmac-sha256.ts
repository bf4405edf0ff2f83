import { ValueError } from '../errors.ts';
import { revealKeyBytes } from '../key-access/secret-key.ts';
import { bindingLabel, primitivesOf, type KeyRef, type Transformer, type TransformerDeps } from './transformer.ts';
import { encode, FORMAT_TAGS, header, HEADER_BYTES, irreversible, utf8, valueErrorOr } from './output-format.ts';
import { keyVersions } from './versioned-keys.ts';

const TAG = FORMAT_TAGS['hmac-sha256'];

/**
 * Keyed pseudonym: HMAC-SHA256 over header || len(label) u16 || label || value, truncated to
 * outputBytes. Irreversible; stable for a key version, so pseudonyms join. Without the key a
 * pseudonym cannot be recomputed from a guessed value (unlike a plain hash of a low-entropy field).
 * Output: base64url(0xA3 || keyVersion u32 || tag).
 */
export function hmacSha256(params: { key: KeyRef; outputBytes: number; binding?: string }, deps: TransformerDeps): Transformer {
  const primitives = primitivesOf(deps, params.key);
  const keys = keyVersions(params.key, deps, (k) => primitives.hmacSha256(revealKeyBytes(k)));
  return {
    type: 'hmac-sha256',
    reversible: false,
    bind(field) {
      const label = new TextEncoder().encode(bindingLabel(field, params.binding));
      const labelLength = new Uint8Array([label.length >>> 8, label.length & 0xff]);
      // per key version: its header and the MAC's prefix header || len(label) || label
      const prefixes = new Map<number, { h: Uint8Array; prefix: Uint8Array }>();
      const prefixOf = (version: number) => {
        let p = prefixes.get(version);
        if (!p) {
          const h = header(TAG, version);
          prefixes.set(version, (p = { h, prefix: Buffer.concat([h, labelLength, label]) }));
        }
        return p;
      };
      // each value's UTF-8 (a lone surrogate is that value's ValueError), then the tags of all in one call
      const pseudonyms = (values: readonly string[]): (string | ValueError)[] => {
        const version = keys.protectVersion();
        const { h, prefix } = prefixOf(version);
        const bytes = values.map((v) => valueErrorOr(() => utf8(v)));
        const valid = bytes.filter((b): b is Uint8Array => !(b instanceof ValueError));
        const tags = keys.forProtect(version).macMany(prefix, valid, params.outputBytes);
        let next = 0;
        return bytes.map((b) => {
          if (b instanceof ValueError) return b;
          const tag = tags[next++]!;
          const out = Buffer.allocUnsafe(HEADER_BYTES + tag.length);
          out.set(h);
          out.set(tag, HEADER_BYTES);
          return encode(out);
        });
      };
      return {
        protect(value) {
          const [out] = pseudonyms([value]);
          if (out instanceof ValueError) throw out;
          return out!;
        },
        protectMany: pseudonyms,
        unprotect: () => irreversible('hmac-sha256'),
      };
    },
  };
}
