import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { SignJWT, type JWK, type JWTPayload } from 'jose';
import { revealKeyBytes, VeilError, type KeyProvider } from '../engine/index.ts';

// SEC1 ECPrivateKey for P-256 without the public point: OpenSSL derives it from the scalar.
const SEC1_PREFIX = Buffer.from('30310201010420', 'hex');
const SEC1_SUFFIX = Buffer.from('a00a06082a8648ce3d030107', 'hex');

/**
 * Signs access tokens with the keystore's jwt-es256 key (ES256, the primary version) and
 * publishes the public keys of every version, so tokens signed before a rotation verify until
 * they expire. The private scalar never leaves this module.
 */
export class JwtSigner {
  private readonly keys: KeyProvider;
  private readonly keyId: string;
  private readonly cache = new Map<number, { privateKey: KeyObject; jwk: JWK }>();

  constructor(keys: KeyProvider, keyId: string) {
    this.keys = keys;
    this.keyId = keyId;
  }

  async sign(claims: JWTPayload, typ: string): Promise<string> {
    // a private key is a key: refused with the others once the KEK's lease ran out (public keys stay published)
    this.keys.assertUsable?.();
    const info = this.keys.info(this.keyId);
    if (!info) throw new VeilError('KEY_UNAVAILABLE', `token signing key ${this.keyId} is not in the keystore`);
    const { privateKey, jwk } = this.version(info.primary);
    return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ, kid: jwk.kid! }).sign(privateKey);
  }

  /** The JWKS document: public keys of every version, newest first. */
  jwks(): { keys: JWK[] } {
    const info = this.keys.info(this.keyId);
    if (!info) return { keys: [] };
    return { keys: [...info.versions].reverse().map((v) => this.version(v.version).jwk) };
  }

  private version(version: number): { privateKey: KeyObject; jwk: JWK } {
    let entry = this.cache.get(version);
    if (!entry) {
      const secret = this.keys.key(this.keyId, version);
      if (!secret) throw new VeilError('KEY_UNAVAILABLE', `token signing key ${this.keyId} has no version ${version}`);
      const der = Buffer.concat([SEC1_PREFIX, revealKeyBytes(secret), SEC1_SUFFIX]);
      const privateKey = createPrivateKey({ key: der, format: 'der', type: 'sec1' });
      const { kty, crv, x, y } = createPublicKey(privateKey).export({ format: 'jwk' });
      entry = { privateKey, jwk: { kty, crv, x, y, kid: `${this.keyId}.v${version}`, alg: 'ES256', use: 'sig' } as JWK };
      this.cache.set(version, entry);
    }
    return entry;
  }
}
