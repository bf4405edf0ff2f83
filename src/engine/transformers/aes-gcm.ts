import { ValueError } from '../errors.ts';
import { GCM_NONCE_BYTES, GCM_TAG_BYTES } from '../crypto/aes-gcm.ts';
import type { GcmPrimitive } from '../crypto/primitives.ts';
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

const TAG = FORMAT_TAGS['aes-gcm'];
const encoder = new TextEncoder();

/**
 * Randomized AEAD (AES-GCM, 96-bit random nonce): equal values protect to different outputs, so
 * nothing is learnt from equality. AAD = output header || binding label.
 * Output: base64url(0xA2 || keyVersion u32 || nonce(12) || C || tag(16)).
 * A random 96-bit nonce bounds a key to about 2^32 protections (NIST SP 800-38D §8.3): rotate.
 */
export function aesGcm(params: { key: KeyRef; binding?: string }, deps: TransformerDeps): Transformer {
  const primitives = primitivesOf(deps, params.key);
  const keys = keyVersions(params.key, deps, (k) => primitives.aesGcm(revealKeyBytes(k)));
  return {
    type: 'aes-gcm',
    reversible: true,
    bind(field) {
      const label = encoder.encode(bindingLabel(field, params.binding));
      // per key (a version of a shared key, or a subject's key): its header and the associated data header || label (and its GHASH state), built once
      const aads = new WeakMap<GcmPrimitive, { h: Uint8Array; prepared: object }>();
      const aadOf = (version: number, gcm: GcmPrimitive) => {
        let a = aads.get(gcm);
        if (!a) {
          const h = header(TAG, version);
          aads.set(gcm, (a = { h, prepared: gcm.prepareAad(Buffer.concat([h, label])) }));
        }
        return a;
      };
      return {
        protect(value) {
          const version = keys.protectVersion();
          const gcm = keys.forProtect(version);
          const { h, prepared } = aadOf(version, gcm);
          const length = utf8Length(value);
          const out = outputBuffer(h, GCM_NONCE_BYTES + length + GCM_TAG_BYTES);
          const nonce = out.subarray(HEADER_BYTES, HEADER_BYTES + GCM_NONCE_BYTES);
          deps.random(nonce);
          out.write(value, HEADER_BYTES + GCM_NONCE_BYTES, 'utf8');
          return encode(gcm.sealInPlace(nonce, prepared, out, HEADER_BYTES + GCM_NONCE_BYTES, length));
        },
        protectMany(values) {
          const version = keys.protectVersion();
          const gcm = keys.forProtect(version);
          const { h, prepared } = aadOf(version, gcm);
          return sealEach(
            values,
            (value, length) => {
              const out = outputBuffer(h, GCM_NONCE_BYTES + length + GCM_TAG_BYTES);
              const nonce = out.subarray(HEADER_BYTES, HEADER_BYTES + GCM_NONCE_BYTES);
              deps.random(nonce);
              out.write(value, HEADER_BYTES + GCM_NONCE_BYTES, 'utf8');
              return { out, job: { nonce, aad: prepared, out, offset: HEADER_BYTES + GCM_NONCE_BYTES, length } };
            },
            (seals) => gcm.sealMany(seals),
          );
        },
        unprotect(value) {
          const { version, payload } = decode(value, TAG, GCM_NONCE_BYTES + GCM_TAG_BYTES);
          const key = keys.forUnprotect(version);
          const plaintext = key.open(payload.subarray(0, GCM_NONCE_BYTES), aadOf(version, key).prepared, payload.subarray(GCM_NONCE_BYTES));
          if (!plaintext) throw new ValueError('PROTECTED_VALUE_INVALID', AUTHENTICATION_FAILED);
          return fromUtf8(plaintext);
        },
        unprotectMany(values) {
          return openEach(
            values,
            { tag: TAG, minPayload: GCM_NONCE_BYTES + GCM_TAG_BYTES },
            (version) => keys.forUnprotect(version),
            (gcm, version, payloads) => gcm.openMany(aadOf(version, gcm).prepared, payloads),
          );
        },
      };
    },
  };
}
