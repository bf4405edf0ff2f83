import { randomUUID } from 'node:crypto';
import { createLocalJWKSet, decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWK } from 'jose';
import { z } from 'zod';
import type { KeyProvider } from '../engine/index.ts';
import { ensureKey, JwtSigner, type KeyCreator } from '../keystore/index.ts';
import { SubjectsError } from './errors.ts';
import type { Erasure } from './subject-store.ts';

/**
 * Erasure receipts (issue 29): what an erasure destroyed, as a compact JWS (ES256) signed by the
 * key set's own `veil-receipts` key — not the token signing key, so a receipt can never pass as an
 * access token, and the power to mint receipts is not the power to mint tokens. It names the
 * subject by the store's reference (a keyed hash, never the id) and the destroyed key by the
 * SHA-256 of its wrapped bytes (never the key). docs/erasure.md, "Receipts".
 */
export const RECEIPT_KEY = 'veil-receipts';
export const RECEIPT_TYP = 'veil-erasure-receipt+jwt';
// a receipt is a few hundred characters; anything much longer is not one (and is not parsed)
const MAX_RECEIPT_CHARS = 4096;

const receiptClaimsSchema = z.strictObject({
  iss: z.string().min(1).max(256),
  jti: z.uuid(),
  iat: z.int().nonnegative(),
  /** the subject's reference: hex of HMAC-SHA256 under the key set's veil-subjects-index key */
  sub: z.string().regex(/^[0-9a-f]{32}$/),
  generation: z.int().min(1),
  erasedAt: z.iso.datetime(),
  by: z.string().min(1).max(256),
  // the erasure service allows 500 code points: up to 1,000 UTF-16 units
  reason: z.string().min(1).max(1000),
  destroyedKey: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  alreadyErased: z.boolean(),
  /**
   * the version of veil-receipts that signed it, as the header's kid names it (`veil-receipts.v<n>`):
   * signed, so a verifier picking the key by kid can check it picked that one. Receipts signed
   * before issue 43 lack it.
   */
  keyVersion: z.int().min(1).optional(),
});

export type ReceiptClaims = z.infer<typeof receiptClaimsSchema>;

/** A signed receipt and what it says. */
export interface ErasureReceipt {
  /** the compact JWS */
  receipt: string;
  claims: ReceiptClaims;
}

/** What receipts need of the key set to sign: LocalKeystore (the key is created on first use). */
export type ReceiptKeySource = KeyCreator<'jwt-es256'>;

/** Creates `veil-receipts` when absent; a process that lost the race to create it reads the winner's. */
export const ensureReceiptKey = async (keys: ReceiptKeySource): Promise<void> => void (await ensureKey(keys, RECEIPT_KEY, 'jwt-es256'));

/** Signs receipts under the primary version of `veil-receipts`, created on first use. */
export class ReceiptSigner {
  private readonly keys: ReceiptKeySource;
  private readonly issuer: string;
  private readonly signer: JwtSigner;

  constructor(keys: ReceiptKeySource, issuer: string) {
    this.keys = keys;
    this.issuer = issuer;
    this.signer = new JwtSigner(keys, RECEIPT_KEY);
  }

  async sign(erasure: Erasure, now: Date): Promise<ErasureReceipt> {
    await ensureReceiptKey(this.keys);
    // the primary version, read in the same synchronous run as JwtSigner.sign reads it (checked below)
    const keyVersion = this.keys.info(RECEIPT_KEY)?.primary;
    const claims: ReceiptClaims = {
      iss: this.issuer,
      jti: randomUUID(),
      iat: Math.floor(now.getTime() / 1000),
      sub: erasure.subject,
      generation: erasure.generation,
      erasedAt: erasure.erasedAt,
      by: erasure.by,
      reason: erasure.reason,
      ...(erasure.destroyedKey ? { destroyedKey: erasure.destroyedKey } : {}),
      alreadyErased: erasure.alreadyErased,
      keyVersion,
    };
    // the shape is checked on the way out too: a receipt that its own verifier would refuse is never issued
    receiptClaimsSchema.parse(claims);
    const receipt = await this.signer.sign(claims, RECEIPT_TYP);
    if (decodeProtectedHeader(receipt).kid !== receiptKid(keyVersion!)) throw new Error('the receipt key changed while a receipt was signed');
    return { receipt, claims };
  }
}

/**
 * Checks a receipt against a key set: ES256 only, signed by some version of `veil-receipts` (so a
 * receipt issued before a rotation still verifies), of the receipt type, with exactly the
 * receipt's claims; `issuer`, when given, must match. RECEIPT_INVALID says which check failed,
 * never echoing the receipt.
 */
export async function verifyReceipt(jws: string, keys: KeyProvider, options: { issuer?: string } = {}): Promise<ReceiptClaims> {
  if (typeof jws !== 'string' || jws.length > MAX_RECEIPT_CHARS) throw invalid("it is not a compact JWS of a receipt's size");
  const jwks = new JwtSigner(keys, RECEIPT_KEY).jwks();
  if (jwks.keys.length === 0) throw invalid(`the key set holds no ${RECEIPT_KEY} key`);
  let payload: unknown;
  let kid: string | undefined;
  try {
    ({
      payload,
      protectedHeader: { kid },
    } = await jwtVerify(jws.trim(), createLocalJWKSet(jwks), {
      algorithms: ['ES256'],
      typ: RECEIPT_TYP,
      ...(options.issuer ? { issuer: options.issuer } : {}),
    }));
  } catch (e) {
    throw invalid(whyRefused(e));
  }
  const parsed = receiptClaimsSchema.safeParse(payload);
  if (!parsed.success) throw invalid(`its claims do not have the receipt's shape (${parsed.error.issues.map((i) => i.path.join('.') || '(root)').join(', ')})`);
  const { keyVersion } = parsed.data;
  if (keyVersion !== undefined && kid !== receiptKid(keyVersion)) throw invalid('its keyVersion claim is not the version its kid names');
  return parsed.data;
}

/** The kid of a version of veil-receipts, in JWS headers and the published JWKS (JwtSigner's `<id>.v<n>`). */
export const receiptKid = (version: number): string => `${RECEIPT_KEY}.v${version}`;

/**
 * The public keys of every version of veil-receipts (newest first; none before the first erasure),
 * as JWKs with kid, alg ES256 and use sig: what /.well-known/jwks.json and `veil keys
 * export-public` publish so that anyone can verify a receipt with a JOSE library (issue 43).
 * Versions are never removed, so a receipt signed before a rotation keeps verifying.
 */
export function receiptPublicKeys(keys: KeyProvider): () => JWK[] {
  const signer = new JwtSigner(keys, RECEIPT_KEY);
  return () => signer.jwks().keys;
}

function whyRefused(e: unknown): string {
  if (e instanceof joseErrors.JWSSignatureVerificationFailed) return 'its signature does not verify';
  if (e instanceof joseErrors.JWKSNoMatchingKey) return `no version of ${RECEIPT_KEY} in this key set signed it`;
  if (e instanceof joseErrors.JOSEAlgNotAllowed) return 'its algorithm is not ES256';
  if (e instanceof joseErrors.JWTClaimValidationFailed) return `its ${e.claim} claim is not acceptable`;
  if (e instanceof joseErrors.JOSEError) return `it is not a receipt (${e.code})`;
  return 'it is not a compact JWS';
}

const invalid = (why: string) => new SubjectsError('RECEIPT_INVALID', `the erasure receipt is refused: ${why}`);
