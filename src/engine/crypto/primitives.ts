import { AesGcm, type GcmSeal } from './aes-gcm.ts';
import { AesSiv, type SivSeal } from './aes-siv.ts';
import { Ff1 } from './ff1.ts';
import { Ff31 } from './ff3-1.ts';
import { hmacSha256 } from './hmac-sha256.ts';
import { createSecretKey } from 'node:crypto';
import type { NumeralCipher } from '../fpe/fpe-format.ts';

/**
 * The keyed primitives the transformers run on, built per key (a version of a shared key, or a
 * data subject's key) by one factory each: the JavaScript engine's own (JS_PRIMITIVES, the
 * default, and the oracle the other is tested against), or another implementation of the same
 * contract — veil's native core (src/native, issue 42), handed in by the wiring. A state a
 * primitive returns (a SIV prefix, a GCM associated data) goes back only to that primitive.
 */
export interface Primitives {
  /** RFC 5297 AES-SIV; 32, 48 or 64 bytes */
  aesSiv(key: Uint8Array): SivPrimitive;
  /** SP 800-38D AES-GCM, 96-bit nonces, 128-bit tags; 16, 24 or 32 bytes */
  aesGcm(key: Uint8Array): GcmPrimitive;
  /** RFC 2104 HMAC-SHA256 (any key length veil's keystore makes) */
  hmacSha256(key: Uint8Array): MacPrimitive;
  /** SP 800-38G FF1 over numerals below `radix`, for one tweak */
  ff1(key: Uint8Array, radix: number, tweak: Uint8Array): NumeralCipher;
  /** SP 800-38G Rev. 1 FF3-1, for one 7-byte tweak */
  ff31(key: Uint8Array, radix: number, tweak: Uint8Array): NumeralCipher;
  /**
   * The primitives of keys scoped to a data subject (absent: these). Their values run one at a
   * time, each under its own subject's key, and an implementation whose every call costs more
   * than a value's cipher (a native core behind N-API) hands the JavaScript engine's here.
   */
  readonly subjectKeys?: Primitives;
}

export interface SivPrimitive {
  /** the state after the associated data (S2V's D), shared by every value sealed under it */
  prefix(associatedData: readonly Uint8Array[]): object;
  /** the plaintext sits at out[offset + 16, +length): writes V before it and encrypts it in place */
  sealInPlace<T extends Uint8Array>(prefix: object, out: T, offset: number, length: number): T;
  /** sealInPlace for each item */
  sealMany(prefix: object, items: readonly SivSeal[]): void;
  /** the plaintext of V || C, or undefined when it does not authenticate */
  open(prefix: object, sealed: Uint8Array): Uint8Array | undefined;
  /** open for each V || C */
  openMany(prefix: object, sealed: readonly Uint8Array[]): (Uint8Array | undefined)[];
}

export interface GcmPrimitive {
  /** the associated data, prepared once for every value sealed or opened under it */
  prepareAad(aad: Uint8Array): object;
  /** the plaintext at out[offset, +length) is encrypted in place, its tag written after it */
  sealInPlace<T extends Uint8Array>(nonce: Uint8Array, aad: object, out: T, offset: number, length: number): T;
  /** sealInPlace for each item (each with its nonce and prepared associated data) */
  sealMany(items: readonly (Omit<GcmSeal, 'aad'> & { aad: object })[]): void;
  /** the plaintext of C || tag, or undefined when it does not authenticate */
  open(nonce: Uint8Array, aad: object, sealed: Uint8Array): Uint8Array | undefined;
  /** open for each nonce || C || tag, as a token carries it */
  openMany(aad: object, sealed: readonly Uint8Array[]): (Uint8Array | undefined)[];
}

export interface MacPrimitive {
  /** HMAC(key, prefix || value) cut to tagBytes (16..32) for each value */
  macMany(prefix: Uint8Array, values: readonly Uint8Array[], tagBytes: number): Uint8Array[];
}

export type { SivSeal };

/** The JavaScript engine's primitives (src/engine/crypto), the default. */
export const JS_PRIMITIVES: Primitives = {
  aesSiv: (key) => new AesSiv(key),
  aesGcm: (key) => new AesGcm(key),
  hmacSha256: (key) => {
    const k = createSecretKey(key);
    return { macMany: (prefix, values, tagBytes) => values.map((v) => hmacSha256(k, [prefix, v], tagBytes)) };
  },
  ff1: (key, radix, tweak) => new Ff1(key, radix, tweak),
  ff31: (key, radix, tweak) => new Ff31(key, radix, tweak),
};
