// veil's native protection core (native/, Rust over RustCrypto through napi-rs; issue 42): its
// loader and keyrings (core.ts), the engine's keyed primitives built on them (primitives.ts), and
// the port of the JSON byte scanner (json-scan.ts).
export { fpeKeyring, gcmKeyring, hmacKeyring, nativeCore, offsetsOf, sivKeyring } from './core.ts';
export { NATIVE_FAULTS, NativeFault, type NativeFaultCode } from './errors.ts';
export type { FpeKeyring, FpeMode, GcmKeyring, HmacKeyring, OpenedBatch, SivKeyring } from './keyrings.ts';
export { nativeJsonScanner, type NativeJsonScanner, type ScannedRecord } from './json-scan.ts';
export { nativePrimitives } from './primitives.ts';
