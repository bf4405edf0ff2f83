// The native core's keyrings as JavaScript sees them (native/src/*_keyring.rs): keys cross in
// once and stay; values cross a batch at a time, as one buffer and its offsets.

/** What every keyring has: `remove` drops a key's state (zeroized, but for HMAC's: `sha2` 0.10 cannot); `size` counts keys. */
interface Keyring {
  remove(keyId: string): boolean;
  readonly size: number;
}

/** AES-SIV (RFC 5297), the batched SIV: the associated data is the batch's. */
export interface SivKeyring extends Keyring {
  /** 32, 48 or 64 bytes, K1 || K2 as RFC 5297 writes them; the caller then fills its copy with zeros */
  add(keyId: string, key: Uint8Array): void;
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
export interface FpeKeyring extends Keyring {
  /** 16, 24 or 32 bytes; the caller then fills its copy with zeros */
  add(keyId: string, mode: FpeMode, key: Uint8Array): void;
  /** FF1: any tweak length; FF3-1: 7 bytes */
  encryptMany(keyId: string, radix: number, tweak: Uint8Array, numerals: Uint16Array, offsets: Uint32Array): Uint16Array;
  decryptMany(keyId: string, radix: number, tweak: Uint8Array, numerals: Uint16Array, offsets: Uint32Array): Uint16Array;
}

/** AES-GCM (SP 800-38D), 96-bit nonces from the caller and 128-bit tags: a sealed value is nonce || C || tag. */
export interface GcmKeyring extends Keyring {
  /** 16, 24 or 32 bytes; the caller then fills its copy with zeros */
  add(keyId: string, key: Uint8Array): void;
  /** value i under nonce i (`nonces`: 12 fresh random bytes per value); each nonce || C || tag back to back, value i at offsets[i] + 28 × i */
  sealMany(keyId: string, aad: Uint8Array, nonces: Uint8Array, values: Uint8Array, offsets: Uint32Array): Buffer;
  openMany(keyId: string, aad: Uint8Array, sealed: Uint8Array, offsets: Uint32Array): OpenedBatch;
}

/** HMAC-SHA256 pseudonyms: HMAC(key, prefix || value) cut to 16–32 bytes, the prefix shared by the batch. */
export interface HmacKeyring extends Keyring {
  /** at least 1 byte; the caller then fills its copy with zeros */
  add(keyId: string, key: Uint8Array): void;
  /** the tags back to back, `tagBytes` each */
  macMany(keyId: string, prefix: Uint8Array, values: Uint8Array, offsets: Uint32Array, tagBytes: number): Buffer;
}

/** The core's JSON scanner (native/src/json_scanner.rs): record i's events are events[4 × ends[i − 1], 4 × ends[i]); `failed`: the records that are not JSON. */
export interface CoreJsonScanner {
  scanMany(records: Uint8Array, offsets: Uint32Array): { events: Uint32Array; ends: Uint32Array; failed: number[] };
}
