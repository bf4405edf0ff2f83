import { VeilError } from '../engine/index.ts';
import { DATA_KEY_CONTEXT } from './keyset-envelope.ts';
import type { Kms } from './kms/kms.ts';

export interface KeyLeaseOptions {
  /** the KEK, uncached (a retrying decorator is fine): every renewal must reach it */
  kms: Kms;
  /** the wrapped data key to unwrap again (the keystore's current one) */
  wrapped: () => Uint8Array | undefined;
  /** how long keys stay usable after the KEK last answered */
  ttlMs: number;
  /** how often the KEK is asked while it answers (default ttl / 4, at most 60 s) */
  renewEveryMs?: number;
  /** how often while it does not (default 1 s): recovery is quick once it is back */
  retryEveryMs?: number;
  now?: () => number;
  /** told when the lease turns invalid or valid again (no secret: the KEK's description, a code) */
  onChange?: (valid: boolean, reason?: string) => void;
}

/**
 * Fail closed, visibly: keys decrypted under a KMS-held KEK may be used only while the KEK keeps
 * answering. The lease unwraps the keystore's data key again every `renewEveryMs`; each success
 * extends it to now + ttl. With the KMS unreachable the process keeps serving for what is left of
 * the ttl, then every transform is refused with KMS_UNAVAILABLE (LocalKeystore.assertUsable) and
 * health says why; the first success after the KMS is back makes it valid again.
 */
export class KeyLease {
  private validUntil: number;
  private reason?: string;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  /** the validity onChange last reported */
  private announced = true;
  private readonly now: () => number;
  private readonly options: KeyLeaseOptions;

  constructor(options: KeyLeaseOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    // opened: the keystore just unwrapped the data key
    this.validUntil = this.now() + options.ttlMs;
  }

  /** Starts renewing in the background (the timer does not keep the process alive). */
  start(): this {
    this.schedule(this.renewEvery());
    return this;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** Throws KMS_UNAVAILABLE when the lease ran out. */
  check(): void {
    if (this.now() < this.validUntil) return;
    if (this.announced) {
      // a renewal may still be waiting on the KMS: say it when the first call is refused
      this.announced = false;
      this.options.onChange?.(false, this.reason ?? 'KMS_UNAVAILABLE');
    }
    // this message reaches callers (a 503 body, the token endpoint's refusal): which KMS and key is
    // for the process's own log (onChange), not for them
    throw new VeilError('KMS_UNAVAILABLE', `the key-encryption key has not answered for ${Math.round(this.options.ttlMs / 1000)} s: keys are not used until it does${this.reason ? ` (${this.reason})` : ''}`);
  }

  /** For health: valid or not, and why not. */
  status(): { valid: boolean; reason?: string; kek: string } {
    const valid = this.now() < this.validUntil;
    return { valid, kek: this.options.kms.description, ...(valid ? {} : { reason: this.reason ?? 'KMS_UNAVAILABLE' }) };
  }

  /** One renewal now: unwrap the data key again. */
  async renew(): Promise<boolean> {
    const wrapped = this.options.wrapped();
    if (!wrapped) return true;
    let ok: boolean;
    try {
      (await this.options.kms.unwrap(wrapped, DATA_KEY_CONTEXT)).fill(0);
      this.validUntil = this.now() + this.options.ttlMs;
      this.reason = undefined;
      ok = true;
    } catch (e) {
      this.reason = (e as { code?: string }).code ?? (e as Error).name;
      ok = false;
    }
    const valid = this.now() < this.validUntil;
    if (valid !== this.announced) {
      this.announced = valid;
      this.options.onChange?.(valid, this.reason);
    }
    return ok;
  }

  private renewEvery(): number {
    return this.options.renewEveryMs ?? Math.min(60_000, Math.max(250, this.options.ttlMs / 4));
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.renew().then((ok) => this.schedule(ok ? this.renewEvery() : (this.options.retryEveryMs ?? 1_000)));
    }, ms);
    this.timer.unref();
  }
}
