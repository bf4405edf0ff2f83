/**
 * Key material wrapper. The bytes sit in a module-private WeakMap: code that holds a SecretKey
 * can pass it around and log it safely (it prints as [SecretKey]), but only the crypto
 * primitives — the one place allowed to import `revealKeyBytes`, enforced by the lint config —
 * can read them. Like Tink's Aead, callers get operations, not keys.
 */
const material = new WeakMap<SecretKey, Uint8Array>();

export class SecretKey {
  readonly length: number;
  private constructor(length: number) {
    this.length = length;
  }

  static fromBytes(bytes: Uint8Array): SecretKey {
    const key = new SecretKey(bytes.length);
    material.set(key, Uint8Array.from(bytes));
    return key;
  }

  toString(): string {
    return '[SecretKey]';
  }

  toJSON(): string {
    return '[SecretKey]';
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return '[SecretKey]';
  }
}

/** For crypto primitives and the keystore only (eslint.config.js: no-restricted-imports of revealKeyBytes elsewhere in src). */
export function revealKeyBytes(key: SecretKey): Uint8Array {
  const bytes = material.get(key);
  if (!bytes) throw new Error('not a SecretKey');
  return bytes;
}
