import type { SecretKey } from './secret-key.ts';

/** Key types veil knows, with the key sizes (bytes) each accepts; the first size is generated. */
export const KEY_TYPES = {
  'aes-siv': { sizes: [64, 32, 48] },
  'aes-gcm': { sizes: [32, 16, 24] },
  ff1: { sizes: [32, 16, 24] },
  'ff3-1': { sizes: [32, 16, 24] },
  'hmac-sha256': { sizes: [32, 16, 24, 48, 64] },
  /** access-token signing: the private scalar of a P-256 key (ES256) */
  'jwt-es256': { sizes: [32] },
} as const;

export type KeyType = keyof typeof KEY_TYPES;
export const KEY_TYPE_NAMES = Object.keys(KEY_TYPES) as KeyType[];

export interface KeyVersionInfo {
  version: number;
  createdAt: string;
  /** how the material arrived: generated here or imported */
  origin: 'generated' | 'imported';
}

/** What may be shown about a key: never its material. */
export interface KeyInfo {
  id: string;
  type: KeyType;
  primary: number;
  versions: readonly KeyVersionInfo[];
}

/**
 * Source of keys for the engine. Implementations: the local keystore file (src/keystore), an
 * in-memory provider for tests, and decorators (caching) around remote ones later.
 */
export interface KeyProvider {
  info(id: string): KeyInfo | undefined;
  /** the material of one version, wrapped; undefined when the key or version does not exist */
  key(id: string, version: number): SecretKey | undefined;
  /**
   * Throws (a VeilError, KMS_UNAVAILABLE) when the keys may not be used now, although held — the
   * key-encryption key's lease ran out. The engine asks before every transform, so keys the
   * transformers have cached are refused too.
   */
  assertUsable?(): void;
}
