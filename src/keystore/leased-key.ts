import { revealKeyBytes, type KeyProvider } from '../engine/index.ts';

/**
 * A copy of one key version's bytes, for the database door's leased keys (src/db/lease-grant.ts,
 * docs/database.md "Leased keys"): the one way key bytes leave veil, taken only when the operator
 * turns leases on (VEIL_DB_SOCKET_LEASES) and only for a field veil has just authorized. Lives in
 * the keystore because only the keystore and the crypto primitives may unwrap a SecretKey.
 */
export function leasedKeyBytes(keys: KeyProvider, id: string, version: number): Uint8Array | undefined {
  const key = keys.key(id, version);
  return key === undefined ? undefined : Uint8Array.from(revealKeyBytes(key));
}
