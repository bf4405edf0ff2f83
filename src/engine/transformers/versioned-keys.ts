import { ValueError, VeilError } from '../errors.ts';
import type { KeyProvider } from '../key-access/key-provider.ts';
import type { SecretKey } from '../key-access/secret-key.ts';
import type { KeyRef, TransformerDeps } from './transformer.ts';
import { SubjectScopedKeys } from './subject-scoped-keys.ts';
import { SubjectSlot } from '../key-access/subject-keyring.ts';

/**
 * A key reference's primitives by version: the version protect uses now, and the primitive of a
 * version for protect (must exist) or unprotect (a value's header named it).
 */
export interface KeyVersions<P> {
  protectVersion(): number;
  forProtect(version: number): P;
  forUnprotect(version: number): P;
}

/** The primitives of a reference: the keystore's versions, or the current data subject's key when the reference is scoped to the subject. */
export function keyVersions<P>(ref: KeyRef, deps: TransformerDeps, build: (key: SecretKey) => P): KeyVersions<P> {
  return ref.scope === 'subject' ? new SubjectScopedKeys(ref, deps.subjects ?? new SubjectSlot(), build) : new VersionedKeys(ref, deps.keys, build);
}

/**
 * Per-version primitives of one key reference, built on first use and cached, so a value costs
 * a map lookup rather than a key schedule. Protect uses the pinned version or the keystore's
 * primary (read each call, so a rotation takes effect without a restart).
 */
export class VersionedKeys<P> implements KeyVersions<P> {
  private readonly cache = new Map<number, P>();
  private readonly ref: KeyRef;
  private readonly keys: KeyProvider;
  private readonly build: (key: SecretKey) => P;

  constructor(ref: KeyRef, keys: KeyProvider, build: (key: SecretKey) => P) {
    this.ref = ref;
    this.keys = keys;
    this.build = build;
  }

  protectVersion(): number {
    if (this.ref.version !== undefined) return this.ref.version;
    const info = this.keys.info(this.ref.id);
    if (!info) throw new VeilError('KEY_UNAVAILABLE', `key ${this.ref.id} (reference ${this.ref.name}) is not in the keystore`);
    return info.primary;
  }

  /** Primitive of a version: for protect the version must exist (else the service is misconfigured). */
  forProtect(version: number): P {
    const p = this.get(version);
    if (!p) throw new VeilError('KEY_UNAVAILABLE', `key ${this.ref.id} has no version ${version}`);
    return p;
  }

  /** Primitive of a version named by a protected value; unknown versions are the value's problem. */
  forUnprotect(version: number): P {
    const p = this.get(version);
    if (!p) throw new ValueError('KEY_VERSION_UNKNOWN', `names key version ${version}, which key ${this.ref.id} does not hold`);
    return p;
  }

  private get(version: number): P | undefined {
    let p = this.cache.get(version);
    if (p) return p;
    const key = this.keys.key(this.ref.id, version);
    if (!key) return undefined;
    p = this.build(key);
    this.cache.set(version, p);
    return p;
  }
}
