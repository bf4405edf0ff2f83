import { ValueError } from '../errors.ts';
import type { SivPrimitive, SivSeal } from '../crypto/primitives.ts';
import { revealKeyBytes } from '../key-access/secret-key.ts';
import { bindingLabel, primitivesOf, type KeyRef, type Transformer, type TransformerDeps } from './transformer.ts';
import {
  AUTHENTICATION_FAILED,
  decode,
  encode,
  FORMAT_TAGS,
  fromUtf8,
  header,
  HEADER_BYTES,
  openEach,
  outputBuffer,
  sealEach,
  utf8Length,
} from './output-format.ts';
import { keyVersions } from './versioned-keys.ts';

const TAG = FORMAT_TAGS['aes-siv'];
const encoder = new TextEncoder();

/**
 * Deterministic AEAD (RFC 5297): equal values of a field protect to equal outputs, so protected
 * columns still join and group. Associated data = [output header, binding label], so a value moved
 * to another field, or given another key version in its header, fails to unprotect.
 * Output: base64url(0xA1 || keyVersion u32 || V(16) || C).
 */
export function aesSiv(params: { key: KeyRef; binding?: string }, deps: TransformerDeps): Transformer {
  const primitives = primitivesOf(deps, params.key);
  const keys = keyVersions(params.key, deps, (k) => primitives.aesSiv(revealKeyBytes(k)));
  return {
    type: 'aes-siv',
    reversible: true,
    bind(field) {
      const label = encoder.encode(bindingLabel(field, params.binding));
      // per key (a version of a shared key, or a subject's key): its header and the S2V state over [header, label], computed once
      const prefixes = new WeakMap<SivPrimitive, { h: Uint8Array; prefix: object }>();
      const prefix = (siv: SivPrimitive, version: number) => {
        let p = prefixes.get(siv);
        if (!p) {
          const h = header(TAG, version);
          prefixes.set(siv, (p = { h, prefix: siv.prefix([h, label]) }));
        }
        return p;
      };
      return {
        protect(value) {
          const version = keys.protectVersion();
          const siv = keys.forProtect(version);
          const { h, prefix: p } = prefix(siv, version);
          const length = utf8Length(value);
          const out = outputBuffer(h, 16 + length);
          out.write(value, HEADER_BYTES + 16, 'utf8');
          return encode(siv.sealInPlace(p, out, HEADER_BYTES, length));
        },
        protectMany(values) {
          const version = keys.protectVersion();
          const siv = keys.forProtect(version);
          const { h, prefix: p } = prefix(siv, version);
          return sealEach(
            values,
            (value, length): { out: Buffer; job: SivSeal } => {
              const out = outputBuffer(h, 16 + length);
              out.write(value, HEADER_BYTES + 16, 'utf8');
              return { out, job: { out, offset: HEADER_BYTES, length } };
            },
            (seals) => siv.sealMany(p, seals),
          );
        },
        unprotect(value) {
          const { version, payload } = decode(value, TAG, 16);
          const siv = keys.forUnprotect(version);
          const plaintext = siv.open(prefix(siv, version).prefix, payload);
          if (!plaintext) throw new ValueError('PROTECTED_VALUE_INVALID', AUTHENTICATION_FAILED);
          return fromUtf8(plaintext);
        },
        unprotectMany(values) {
          return openEach(
            values,
            { tag: TAG, minPayload: 16 },
            (version) => keys.forUnprotect(version),
            (siv, version, payloads) => siv.openMany(prefix(siv, version).prefix, payloads),
          );
        },
      };
    },
  };
}
