import { KeystoreError } from '../errors.ts';

/**
 * The key-encryption key (KEK) behind one small port: it wraps and unwraps data keys and never
 * shows its own key. `context` is bound to the wrapped bytes (AES-GCM additional data, AWS KMS
 * encryption context): unwrapping with another context fails, so a wrapped key cannot be moved to
 * another purpose. Adapters: AWS KMS (aws-kms.ts), PKCS#11 (pkcs11-kms.ts); caching, retry and
 * metrics are decorators around any of them.
 */
export interface Kms {
  /** what the KEK is, for logs and health: a kind and a key reference, never a secret */
  readonly description: string;
  wrap(plaintext: Uint8Array, context: string, options?: KmsCallOptions): Promise<Uint8Array>;
  unwrap(wrapped: Uint8Array, context: string, options?: KmsCallOptions): Promise<Uint8Array>;
  close?(): Promise<void>;
  /**
   * Destroys the KEK itself (shredding backups, issue 43): nothing it ever wrapped unwraps again.
   * AWS KMS schedules the key's deletion (`pendingDays`, 7 to 30: the key is unusable from now and
   * gone after them); PKCS#11 destroys the key object. What happened, for the operator.
   */
  destroy?(options: { pendingDays: number }): Promise<string>;
}

/**
 * Per call: `signal` ends the call's wait for the KMS (a lease renewal bounded by its interval):
 * an aborted call rejects with KMS_UNAVAILABLE (retriable); decorators stop retrying. An adapter
 * whose calls cannot be interrupted still stops waiting for them.
 */
export interface KmsCallOptions {
  signal?: AbortSignal;
}

/** Rejects with KMS_UNAVAILABLE once `signal` aborts; never settles otherwise. `what` names the KMS and the call. */
export function abortedCall(signal: AbortSignal | undefined, what: string): { promise: Promise<never>; dispose(): void } {
  if (!signal) return { promise: new Promise<never>(() => undefined), dispose: () => undefined };
  let dispose = () => undefined as void;
  const promise = new Promise<never>((_, reject) => {
    const fail = () => reject(new KmsError('KMS_UNAVAILABLE', `${what}: no answer in the time given (aborted)`));
    if (signal.aborted) return fail();
    signal.addEventListener('abort', fail, { once: true });
    dispose = () => signal.removeEventListener('abort', fail);
  });
  promise.catch(() => undefined);
  return { promise, dispose };
}

export type KmsErrorCode = 'KMS_UNAVAILABLE' | 'KMS_REFUSED';

/**
 * What a KMS call failed with: KMS_UNAVAILABLE (unreachable, throttled, a server error: retriable)
 * or KMS_REFUSED (the wrapped bytes, the context, the key or the credentials are wrong: not).
 * Messages name the KMS and what it said, never key material.
 */
export class KmsError extends KeystoreError {
  declare readonly code: KmsErrorCode;
  constructor(code: KmsErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'KmsError';
  }
}

export function isRetriableKmsError(e: unknown): boolean {
  return e instanceof KmsError && e.retriable;
}
