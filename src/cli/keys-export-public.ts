import type { JWK } from 'jose';
import type { KeyInfo, KeyProvider } from '../engine/index.ts';
import { KeystoreError } from '../keystore/errors.ts';
import { JwtSigner } from '../keystore/index.ts';
import { CliFault } from './errors.ts';

/**
 * `veil keys export-public [--id <id>]` (issue 43): the public halves of the key set's signing keys
 * as one JWKS — every version of every jwt-es256 key (the token signing key, veil-receipts), or of
 * the one `--id` names — with kid, alg ES256 and use sig, as /.well-known/jwks.json publishes them.
 * An auditor verifies erasure receipts against it without veil; nothing in it is secret. Symmetric
 * keys have no public half: naming one is a usage error.
 */
export function publicJwks(keys: KeyProvider & { list(): readonly KeyInfo[] }, id?: string): { keys: JWK[] } {
  if (id !== undefined) {
    const info = keys.info(id);
    if (!info) throw new KeystoreError('KEY_NOT_FOUND', `no key ${id} in the key set`);
    if (info.type !== 'jwt-es256') throw new CliFault('USAGE', `key ${id} is of type ${info.type}: only jwt-es256 keys have a public half`);
  }
  const ids =
    id !== undefined
      ? [id]
      : keys
          .list()
          .filter((k) => k.type === 'jwt-es256')
          .map((k) => k.id);
  return { keys: ids.flatMap((k) => new JwtSigner(keys, k).jwks().keys) };
}
