import { createHmac, timingSafeEqual } from 'node:crypto';
import { revealKeyBytes, VeilError, type KeyProvider } from '../engine/index.ts';

/**
 * HMAC-SHA256 under a keystore's hmac-sha256 key, its bytes staying in this module: the MAC under
 * the key's primary version (or the one named), and a constant-time check of one.
 */
export function macWith(keys: KeyProvider, id: string, data: Buffer, version?: number): { version: number; mac: Buffer } {
  const info = keys.info(id);
  if (!info || info.type !== 'hmac-sha256') throw new VeilError('KEY_UNAVAILABLE', `key ${id} (hmac-sha256) is not in the key set`);
  const v = version ?? info.primary;
  const key = keys.key(id, v);
  if (!key) throw new VeilError('KEY_UNAVAILABLE', `key ${id} has no version ${v}`);
  keys.assertUsable?.();
  return { version: v, mac: createHmac('sha256', revealKeyBytes(key)).update(data).digest() };
}

/** Whether `mac` is the MAC of `data` under that version of the key (false when the key or version is missing). */
export function macVerifies(keys: KeyProvider, id: string, data: Buffer, version: number, mac: Buffer): boolean {
  let expected: Buffer;
  try {
    expected = macWith(keys, id, data, version).mac;
  } catch (e) {
    if (e instanceof VeilError && e.code === 'KEY_UNAVAILABLE') return false;
    throw e;
  }
  return mac.length === expected.length && timingSafeEqual(mac, expected);
}
