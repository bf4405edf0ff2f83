import { ValueError } from '../errors.ts';

/**
 * Keyed outputs carry a 5-byte header like Tink's output prefix: a format tag naming the
 * transformer and output version, then the key version as a big-endian uint32. The header is
 * authenticated (it is part of the associated data). The whole is base64url without padding,
 * so protected values are text-safe in JSON, CSV, URLs and database columns.
 */
export const FORMAT_TAGS = { 'aes-siv': 0xa1, 'aes-gcm': 0xa2, 'hmac-sha256': 0xa3 } as const;
export const HEADER_BYTES = 5;

export function header(tag: number, version: number): Uint8Array {
  const h = new Uint8Array(HEADER_BYTES);
  h[0] = tag;
  new DataView(h.buffer).setUint32(1, version);
  return h;
}

export function encode(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('base64url');
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** Decodes a protected value and checks its tag; returns the key version and the payload. */
export function decode(value: string, tag: number, minPayload: number): { version: number; header: Uint8Array; payload: Uint8Array } {
  if (!BASE64URL.test(value) || value.length % 4 === 1) {
    throw new ValueError('PROTECTED_VALUE_INVALID', 'is not base64url text');
  }
  const bytes = new Uint8Array(Buffer.from(value, 'base64url'));
  // Buffer ignores stray trailing bits; only the canonical spelling of the bytes is accepted,
  // so every edited character of a protected value is detected
  if (encode(bytes) !== value) throw new ValueError('PROTECTED_VALUE_INVALID', 'is not canonical base64url');
  if (bytes.length < HEADER_BYTES + minPayload || bytes[0] !== tag) {
    throw new ValueError('PROTECTED_VALUE_INVALID', 'is not an output of this transformer');
  }
  const version = new DataView(bytes.buffer, bytes.byteOffset).getUint32(1);
  return { version, header: bytes.subarray(0, HEADER_BYTES), payload: bytes.subarray(HEADER_BYTES) };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** UTF-8 of a value; a lone surrogate cannot round-trip, so it is refused. */
export function utf8(value: string): Uint8Array {
  if (!value.isWellFormed()) throw new ValueError('VALUE_NOT_IN_ALPHABET', 'is not well-formed Unicode (lone surrogate)');
  return encoder.encode(value);
}

export function fromUtf8(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new ValueError('PROTECTED_VALUE_INVALID', 'does not decrypt to UTF-8 text');
  }
}

export function irreversible(type: string): never {
  throw new ValueError('ACTION_NOT_CONFIGURED', `${type} is irreversible and cannot unprotect`);
}
