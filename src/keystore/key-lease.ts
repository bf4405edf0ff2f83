import { DATA_KEY_CONTEXT } from './keyset-envelope.ts';
import { KmsError, type Kms } from './kms/kms.ts';
import { KeystoreError } from './errors.ts';

export interface KeyLeaseOptions {
  /** the KEK, uncached (a retrying decorator is fine): every renewal must reach it */
  kms: Kms;
  /** the wrapped data key to unwrap again (the keystore's current one) */
  wrapped: () => Uint8Array | undefined;
  /** how long keys stay usable after the KEK last answered */
  ttlMs: number;
  /** how often the KEK is asked while it answers (default ttl / 4, at most 60 s) */
  renewEveryMs?: number;
  /** how often while it does not (default 1 s), counted from each attempt's start: recovery is quick once it is back */
  retryEveryMs?: number;
  /** how long one renewal waits for the KEK (default retryEveryMs): a hung KMS costs one interval, not the KMS client's timeouts and retries */
  attemptTimeoutMs?: number;
  now?: () => number;
  /** told when the lease turns invalid or valid again (no secret: the KEK's description, a code) */
  onChange?: (valid: boolean, reason?: string) => void;
}

/**
 * Where the KEK stands: `answering`; `silent` — it stopped answering, keys are still usable for
 * what is left of the ttl; `lapsed` — the ttl ran out, keys are refused until it answers again.
 */
export type KekState = 'answering' | 'silent' | 'lapsed';

/** A change of KekState: what a process logs, once per change. Names the KEK and a code, never a key or secret. */
export interface KekTransition {
  state: KekState;
  /** the KEK's description (which KMS and key) */
  kek: string;
  /** silent and lapsed: the KMS's last error code */
  reason?: string;
  /** silent: how long keys stay usable without an answer */
  usableForMs?: number;
}

/**
 * Fail closed, visibly: keys decrypted under a KMS-held KEK may be used only while the KEK keeps
 * answering. The lease unwraps the keystore's data key again every `renewEveryMs`; each success
 * extends it to now + ttl. With the KMS unreachable the process keeps serving for what is left of
 * the ttl, then every transform is refused with KMS_UNAVAILABLE (LocalKeystore.assertUsable) and
 * health says why; the first success after the KMS is back makes it valid again. Each renewal
 * waits at most `attemptTimeoutMs` (its KMS call is aborted then) and, while the KEK does not
 * answer, one starts every `retryEveryMs`. Every change of KekState is told to the watchers once.
 */
export class KeyLease {
  private validUntil: number;
  private reason?: string;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private state: KekState = 'answering';
  private readonly watchers = new Set<(t: KekTransition) => void>();
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

  /** Tells `watcher` every change of the KEK's state from now on; returns how to stop. */
  watch(watcher: (t: KekTransition) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  /** Throws KMS_UNAVAILABLE when the lease ran out. */
  check(): void {
    if (this.now() < this.validUntil) return;
    // a renewal may still be waiting on the KMS: say it when the first call is refused
    this.enter('lapsed');
    // this message reaches callers (a 503 body, the token endpoint's refusal): which KMS and key is
    // for the process's own log (the watchers), not for them
    throw new KeystoreError(
      'KMS_UNAVAILABLE',
      `the key-encryption key has not answered for ${Math.round(this.options.ttlMs / 1000)} s: keys are not used until it does${this.reason ? ` (${this.reason})` : ''}`,
    );
  }

  /** For health: valid or not, and why not. */
  status(): { valid: boolean; reason?: string; kek: string } {
    const valid = this.now() < this.validUntil;
    return { valid, kek: this.options.kms.description, ...(valid ? {} : { reason: this.reason ?? 'KMS_UNAVAILABLE' }) };
  }

  /** One renewal now: unwrap the data key again, waiting at most attemptTimeoutMs. */
  async renew(): Promise<boolean> {
    const wrapped = this.options.wrapped();
    if (!wrapped) return true;
    try {
      await this.unwrapWithin(wrapped, this.options.attemptTimeoutMs ?? this.retryEvery());
    } catch (e) {
      this.reason = (e as { code?: string }).code ?? (e as Error).name;
      this.enter(this.now() < this.validUntil ? 'silent' : 'lapsed');
      return false;
    }
    this.validUntil = this.now() + this.options.ttlMs;
    this.reason = undefined;
    this.enter('answering');
    return true;
  }

  /** The data key unwrapped and wiped, or a rejection once `ms` passed (the call aborted; a late answer is wiped too). */
  private async unwrapWithin(wrapped: Uint8Array, ms: number): Promise<void> {
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(new KmsError('KMS_UNAVAILABLE', `${this.options.kms.description}: no answer within ${ms} ms`));
      }, ms);
    });
    const call = this.options.kms.unwrap(wrapped, DATA_KEY_CONTEXT, { signal: abort.signal });
    try {
      (await Promise.race([call, late])).fill(0);
    } finally {
      clearTimeout(timer);
      void call.then(
        (key) => key.fill(0),
        () => undefined,
      );
    }
  }

  /** Moves to `state` and tells the watchers, once per change (silent never follows lapsed: only an answer ends it). */
  private enter(state: KekState): void {
    if (state === this.state || (state === 'silent' && this.state === 'lapsed')) return;
    const from = this.state;
    this.state = state;
    const kek = this.options.kms.description;
    const transition: KekTransition =
      state === 'answering'
        ? { state, kek }
        : { state, kek, reason: this.reason ?? 'KMS_UNAVAILABLE', ...(state === 'silent' ? { usableForMs: Math.max(0, this.validUntil - this.now()) } : {}) };
    for (const watcher of this.watchers) watcher(transition);
    if (state === 'lapsed') this.options.onChange?.(false, transition.reason);
    else if (from === 'lapsed') this.options.onChange?.(true, undefined);
  }

  private renewEvery(): number {
    return this.options.renewEveryMs ?? Math.min(60_000, Math.max(250, this.options.ttlMs / 4));
  }

  private retryEvery(): number {
    return this.options.retryEveryMs ?? 1_000;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      const started = performance.now();
      void this.renew().then((ok) => this.schedule(ok ? this.renewEvery() : Math.max(0, this.retryEvery() - (performance.now() - started))));
    }, ms);
    this.timer.unref();
  }
}

/** Where a process logs the KEK's transitions (a pino logger fits). */
export interface KekLog {
  warn(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
}

/**
 * Logs each change of the KEK's state once, on the process's logger: the KEK stopped answering
 * (warn, with how long keys stay usable), keys refused (error), the KEK answers again (warn, so
 * that a level that shows the loss shows the recovery too). The KEK's description and the KMS's
 * error code only — never a key, a PIN or a credential. Nothing without a lease (a master key).
 */
export function logKekTransitions(lease: KeyLease | undefined, log: KekLog): void {
  lease?.watch(({ state, kek, reason, usableForMs }) => {
    if (state === 'silent')
      log.warn(
        { kek, code: reason, keysUsableForS: Math.round((usableForMs ?? 0) / 1000) },
        'the key-encryption key did not answer a renewal: keys stay usable until the lease runs out, then are refused until it answers',
      );
    else if (state === 'lapsed')
      log.error(
        { kek, code: 'KMS_UNAVAILABLE', reason },
        "the key-encryption key has not answered for the lease's lifetime: keys are refused (KMS_UNAVAILABLE) until it answers",
      );
    else log.warn({ kek }, 'the key-encryption key answers again: keys in use');
  });
}
