import type { ValueError } from '../errors.ts';
import type { KeyProvider } from '../key-access/key-provider.ts';
import type { SubjectSlot } from '../key-access/subject-keyring.ts';
import { JS_PRIMITIVES, type Primitives } from '../crypto/primitives.ts';

/** The field a value belongs to; keyed transformers bind their output to it. */
export interface FieldBinding {
  readonly className: string;
  readonly propertyName: string;
}

/** A transformer bound to one field: per-field constants (tweak, S2V prefix) computed once. */
export interface FieldTransformer {
  /** throws ValueError when the value cannot be protected */
  protect(value: string): string;
  /** throws ValueError when the value cannot be unprotected; irreversible steps always throw */
  unprotect(value: string): string;
  /**
   * Many values at once, where batching pays (one native AES call per round for all of them):
   * each value's output or the ValueError it is refused with, as protect() would; any other
   * error throws. Optional: a chain falls back to protect() per value.
   */
  protectMany?(values: readonly string[]): (string | ValueError)[];
  unprotectMany?(values: readonly string[]): (string | ValueError)[];
}

/** One configured step of a transformer sequence. */
export interface Transformer {
  readonly type: string;
  readonly reversible: boolean;
  bind(field: FieldBinding): FieldTransformer;
}

/** A key reference as compiled from the configuration's `keys` section. */
export interface KeyRef {
  readonly name: string;
  readonly id: string;
  readonly type: string;
  readonly version?: number;
  /** `subject`: each data subject's own key (issue 29); the version is then the subject key's generation */
  readonly scope?: 'subject';
}

export interface TransformerDeps {
  readonly keys: KeyProvider;
  /** fills a buffer with cryptographically secure random bytes (AES-GCM nonces) */
  readonly random: (bytes: Uint8Array) => Uint8Array;
  /** the data subject whose values run now: subject-scoped key references read its key (none: such values get SUBJECT_REQUIRED) */
  readonly subjects?: SubjectSlot;
  /** the keyed primitives (AES-SIV, AES-GCM, HMAC-SHA256, FF1, FF3-1): the native core's when the wiring hands them in, else the JavaScript engine's */
  readonly primitives?: Primitives;
}

/** The primitives a transformer builds the ciphers of key reference `key` with (a subject-scoped reference: Primitives.subjectKeys when given). */
export function primitivesOf(deps: TransformerDeps, key: KeyRef): Primitives {
  const primitives = deps.primitives ?? JS_PRIMITIVES;
  return key.scope === 'subject' ? (primitives.subjectKeys ?? primitives) : primitives;
}

/** The binding label: `Class.property` unless the step names a shared one. */
export function bindingLabel(field: FieldBinding, override: string | undefined): string {
  return override ?? `${field.className}.${field.propertyName}`;
}
