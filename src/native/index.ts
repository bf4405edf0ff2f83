import { createRequire } from 'node:module';
import { NativeFault } from './errors.ts';

export { NATIVE_FAULTS, NativeFault, type NativeFaultCode } from './errors.ts';

/**
 * veil's native protection core (native/, Rust over RustCrypto through napi-rs; issue 42). Keys
 * cross into it once and stay there; values cross a batch at a time, as one buffer and its
 * offsets (value i is `bytes[offsets[i], offsets[i + 1])`), so a batch is one N-API call.
 */
export interface SivKeyring {
  /** 32, 48 or 64 bytes, K1 || K2 as RFC 5297 writes them; the caller then fills its copy with zeros */
  add(keyId: string, key: Uint8Array): void;
  remove(keyId: string): boolean;
  readonly size: number;
  /** each value's V || C back to back: value i starts at offsets[i] + 16 × i */
  sealMany(keyId: string, associatedData: Uint8Array[], values: Uint8Array, offsets: Uint32Array): Buffer;
  openMany(keyId: string, associatedData: Uint8Array[], sealed: Uint8Array, offsets: Uint32Array): OpenedBatch;
}

/** the plaintexts back to back, and the indexes of the values that did not authenticate (empty in `plaintexts`) */
export interface OpenedBatch {
  plaintexts: Buffer;
  offsets: Uint32Array;
  failed: number[];
}

/** The FPE mode a key is for: FF1, or FF3-1 (deprecated; for data shared with systems that use it). */
export type FpeMode = 'ff1' | 'ff3-1';

/**
 * FF1 and FF3-1 keys (SP 800-38G) and batches of numeral strings through them: value i is
 * `numerals[offsets[i], offsets[i + 1])`, each numeral below the radix, and the output keeps the
 * offsets. A value outside the mode's lengths (the domain rule; FF1 at most 4096 numerals, FF3-1
 * its maxlen) or a numeral not below the radix refuses the whole call, naming the value's index.
 */
export interface FpeKeyring {
  /** 16, 24 or 32 bytes; the caller then fills its copy with zeros */
  add(keyId: string, mode: FpeMode, key: Uint8Array): void;
  remove(keyId: string): boolean;
  readonly size: number;
  /** FF1: any tweak length; FF3-1: 7 bytes */
  encryptMany(keyId: string, radix: number, tweak: Uint8Array, numerals: Uint16Array, offsets: Uint32Array): Uint16Array;
  decryptMany(keyId: string, radix: number, tweak: Uint8Array, numerals: Uint16Array, offsets: Uint32Array): Uint16Array;
}

interface NativeCore {
  SivKeyring: new () => SivKeyring;
  FpeKeyring: new () => FpeKeyring;
}

const ADDON = new URL('../../native/veil-native.node', import.meta.url).pathname;
let loaded: NativeCore | undefined;

/** The core, loaded once. Not built: NATIVE_CORE_MISSING, saying how to build it — never a silent slow path. */
export function nativeCore(): NativeCore {
  if (loaded) return loaded;
  try {
    loaded = createRequire(import.meta.url)(ADDON) as NativeCore;
  } catch (cause) {
    throw new NativeFault('NATIVE_CORE_MISSING', `veil's native core (${ADDON}) does not load; build it with \`sh scripts/build-native.sh\` (npm ci does)`, {
      cause,
    });
  }
  return loaded;
}

export function sivKeyring(): SivKeyring {
  return new (nativeCore().SivKeyring)();
}

export function fpeKeyring(): FpeKeyring {
  return new (nativeCore().FpeKeyring)();
}

/** The offsets of values laid back to back: [0, end of value 0, …, total length]. */
export function offsetsOf(lengths: readonly number[]): Uint32Array {
  const offsets = new Uint32Array(lengths.length + 1);
  lengths.forEach((n, i) => (offsets[i + 1] = offsets[i]! + n));
  return offsets;
}
