import { createHmac, type KeyObject } from 'node:crypto';

/** HMAC-SHA256 (RFC 2104, FIPS 198-1) over the concatenated parts, truncated to tagBytes (16..32). */
export function hmacSha256(key: KeyObject, parts: readonly Uint8Array[], tagBytes = 32): Uint8Array {
  if (!Number.isInteger(tagBytes) || tagBytes < 16 || tagBytes > 32) throw new RangeError('HMAC-SHA256 tag must be 16..32 bytes');
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest().subarray(0, tagBytes));
}
