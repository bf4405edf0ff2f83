import { createHash } from 'node:crypto';

/** A client secret hash as `veil identity hash-secret` writes it, anywhere in a text (comments too). */
const SECRET_HASH = /scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+/g;
const HIDDEN = /hidden:([0-9a-f]{12})\b/g;

/** A fingerprint that tells hashes apart (so a diff shows a changed secret) and cannot be cracked: it covers the salt. */
const fingerprint = (hash: string) => createHash('sha256').update(`veil/secret-hash\0${hash}`).digest('hex').slice(0, 12);

/**
 * The configuration text as the portal shows and exports it: every client secret hash replaced by
 * `hidden:<fingerprint>`. A secret hash lets whoever reads it try passwords offline, and viewers
 * need none of them; the fingerprint changes when the hash does, so the diff a publisher reviews
 * still shows that a client's secret was replaced.
 */
export function redactSecretHashes(text: string): string {
  return text.replace(SECRET_HASH, (hash) => `hidden:${fingerprint(hash)}`);
}

/**
 * The reverse for text an editor sends back: each `hidden:<fingerprint>` becomes the hash of that
 * fingerprint in `bases` (the draft's stored text, or the active version for an import). An
 * unknown fingerprint stays, and validation refuses it as not an scrypt hash.
 */
export function restoreSecretHashes(text: string, ...bases: string[]): string {
  const known = new Map<string, string>();
  for (const base of bases) for (const hash of base.match(SECRET_HASH) ?? []) known.set(fingerprint(hash), hash);
  return text.replace(HIDDEN, (token, fp: string) => known.get(fp) ?? token);
}
