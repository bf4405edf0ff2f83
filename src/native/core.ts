import { createRequire } from 'node:module';
import { NativeFault } from './errors.ts';
import type { CoreJsonScanner, FpeKeyring, GcmKeyring, HmacKeyring, SivKeyring } from './keyrings.ts';

/**
 * veil's native protection core (native/, Rust over RustCrypto through napi-rs; issue 42). Keys
 * cross into it once and stay there; values cross a batch at a time, as one buffer and its
 * offsets (value i is `bytes[offsets[i], offsets[i + 1])`), so a batch is one N-API call.
 */
interface NativeCore {
  SivKeyring: new () => SivKeyring;
  FpeKeyring: new () => FpeKeyring;
  GcmKeyring: new () => GcmKeyring;
  HmacKeyring: new () => HmacKeyring;
  /** the JSON byte scanner over one expectation tree, as json-scan.ts encodes it */
  JsonScanner: new (nodes: Uint32Array, names: Uint8Array, units: Uint16Array) => CoreJsonScanner;
}

const ADDON = new URL('../../native/veil-native.node', import.meta.url).pathname;
let loaded: NativeCore | undefined;

/** The core, loaded once. Not built: NATIVE_CORE_MISSING, saying how to build it — never a silent slow path. */
export function nativeCore(): NativeCore {
  return (loaded ??= loadNativeCore(ADDON));
}

/** The addon at `file`, or NATIVE_CORE_MISSING naming the file and the build command. */
export function loadNativeCore(file: string): NativeCore {
  try {
    return createRequire(import.meta.url)(file) as NativeCore;
  } catch (cause) {
    throw new NativeFault('NATIVE_CORE_MISSING', `veil's native core (${file}) does not load; build it with \`sh scripts/build-native.sh\` (npm ci does)`, {
      cause,
    });
  }
}

export function sivKeyring(): SivKeyring {
  return new (nativeCore().SivKeyring)();
}

export function fpeKeyring(): FpeKeyring {
  return new (nativeCore().FpeKeyring)();
}

export function gcmKeyring(): GcmKeyring {
  return new (nativeCore().GcmKeyring)();
}

export function hmacKeyring(): HmacKeyring {
  return new (nativeCore().HmacKeyring)();
}

/** The offsets of values laid back to back: [0, end of value 0, …, total length]. */
export function offsetsOf(lengths: readonly number[]): Uint32Array {
  const offsets = new Uint32Array(lengths.length + 1);
  lengths.forEach((n, i) => (offsets[i + 1] = offsets[i]! + n));
  return offsets;
}
