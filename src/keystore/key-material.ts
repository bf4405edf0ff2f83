import { KEY_TYPE_NAMES, KEY_TYPES, type KeyType } from '../engine/index.ts';
import { KeystoreError } from './errors.ts';

/** Key ids: lower-case, start with a letter or digit, at most 64 characters. */
export const KEY_ID_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

export function isValidKeyId(id: string): boolean {
  return KEY_ID_PATTERN.test(id);
}

export function isKeyType(type: string): type is KeyType {
  return (KEY_TYPE_NAMES as readonly string[]).includes(type);
}

export function keySizes(type: KeyType): readonly number[] {
  return KEY_TYPES[type].sizes;
}

/**
 * Decodes hex key material for `type`. Surrounding whitespace (a trailing newline from stdin) is
 * ignored. Errors say what is wrong with the input (encoding, length) but never echo any of it.
 */
export function parseHexMaterial(type: KeyType, hex: string): Uint8Array {
  const text = hex.trim();
  const sizes = keySizes(type);
  const expected = `${sizes.join(', ')} bytes (${sizes.map((s) => s * 2).join(', ')} hex digits)`;
  if (text.length === 0) {
    throw new KeystoreError('KEY_MATERIAL_INVALID', `key material is empty; a ${type} key takes ${expected}`);
  }
  const bad = text.search(/[^0-9a-fA-F]/);
  if (bad !== -1) {
    throw new KeystoreError('KEY_MATERIAL_INVALID', `key material must be hex digits only; the character at position ${bad + 1} is not one`);
  }
  if (text.length % 2 !== 0) {
    throw new KeystoreError('KEY_MATERIAL_INVALID', `key material has an odd number of hex digits (${text.length})`);
  }
  const length = text.length / 2;
  if (!sizes.includes(length)) {
    throw new KeystoreError('KEY_MATERIAL_INVALID', `a ${type} key takes ${expected}; got ${length} bytes`);
  }
  const decoded = Buffer.from(text, 'hex');
  const bytes = Uint8Array.from(decoded);
  decoded.fill(0); // small Buffers live in a shared pool: do not leave a copy behind
  return bytes;
}
