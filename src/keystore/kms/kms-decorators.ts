import { createHash } from 'node:crypto';
import { abortedCall, isRetriableKmsError, KmsError, type Kms, type KmsCallOptions } from './kms.ts';

export interface RetryOptions {
  /** calls in all, the first included */
  attempts?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Retries what a KMS reports as retriable (KMS_UNAVAILABLE), with exponential backoff and full
 * jitter; a refusal is not retried. The last error is thrown as it was. A call's abort signal
 * ends the retrying too: the call in flight gets it, and no further attempt or backoff follows.
 */
export function retryingKms(inner: Kms, options: RetryOptions = {}): Kms {
  const attempts = options.attempts ?? 4;
  const base = options.baseDelayMs ?? 100;
  const max = options.maxDelayMs ?? 2_000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const retry = async <T>(call: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (e) {
        if (attempt >= attempts || !isRetriableKmsError(e) || signal?.aborted) throw e;
        const aborted = abortedCall(signal, inner.description);
        try {
          await Promise.race([sleep(Math.random() * Math.min(max, base * 2 ** (attempt - 1))), aborted.promise]);
        } catch {
          throw e;
        } finally {
          aborted.dispose();
        }
      }
    }
  };
  return {
    description: inner.description,
    wrap: (plaintext, context, options) => retry(() => inner.wrap(plaintext, context, options), options?.signal),
    unwrap: (wrapped, context, options) => retry(() => inner.unwrap(wrapped, context, options), options?.signal),
    close: () => inner.close?.() ?? Promise.resolve(),
  };
}

export interface CachingOptions {
  /** how long an unwrapped key is served without asking the KMS again */
  ttlMs: number;
  now?: () => number;
  /** at most this many entries (oldest dropped first) */
  maxEntries?: number;
}

/**
 * Serves an unwrap the KMS answered within the last `ttlMs` without asking it again — so a
 * process keeps its keys through a KMS outage for that long, and no longer: an entry past its
 * lifetime is asked again, and while the KMS is down that fails (fail closed). Entries are keyed
 * by a hash of (context, wrapped bytes) and hold a copy; callers get copies. Wraps are not cached.
 */
export function cachingKms(inner: Kms, options: CachingOptions): Kms {
  const now = options.now ?? Date.now;
  const maxEntries = options.maxEntries ?? 1_000;
  const entries = new Map<string, { plaintext: Uint8Array; until: number }>();
  const keyOf = (wrapped: Uint8Array, context: string) => createHash('sha256').update(context).update('\u0000').update(wrapped).digest('base64');
  return {
    description: inner.description,
    wrap: (plaintext, context, call) => inner.wrap(plaintext, context, call),
    async unwrap(wrapped, context, call?: KmsCallOptions) {
      const key = keyOf(wrapped, context);
      const hit = entries.get(key);
      if (hit && hit.until > now()) return Buffer.from(hit.plaintext);
      if (hit) {
        hit.plaintext.fill(0);
        entries.delete(key);
      }
      const plaintext = await inner.unwrap(wrapped, context, call);
      entries.set(key, { plaintext: Uint8Array.from(plaintext), until: now() + options.ttlMs });
      while (entries.size > maxEntries) {
        const [oldest, entry] = entries.entries().next().value!;
        entry.plaintext.fill(0);
        entries.delete(oldest);
      }
      return plaintext;
    },
    async close() {
      for (const e of entries.values()) e.plaintext.fill(0);
      entries.clear();
      await inner.close?.();
    },
  };
}

/** What the metrics decorator records (prom-client counters and histograms fit it). */
export interface KmsMetricsSink {
  call(op: 'wrap' | 'unwrap', outcome: 'ok' | 'KMS_UNAVAILABLE' | 'KMS_REFUSED' | 'error', seconds: number): void;
}

/** Counts every call by operation and outcome and times it; changes nothing else. */
export function meteredKms(inner: Kms, sink: KmsMetricsSink): Kms {
  const timed = async <T>(op: 'wrap' | 'unwrap', call: () => Promise<T>): Promise<T> => {
    const start = performance.now();
    try {
      const out = await call();
      sink.call(op, 'ok', (performance.now() - start) / 1000);
      return out;
    } catch (e) {
      sink.call(op, e instanceof KmsError ? (e.code as 'KMS_UNAVAILABLE' | 'KMS_REFUSED') : 'error', (performance.now() - start) / 1000);
      throw e;
    }
  };
  return {
    description: inner.description,
    wrap: (plaintext, context, options) => timed('wrap', () => inner.wrap(plaintext, context, options)),
    unwrap: (wrapped, context, options) => timed('unwrap', () => inner.unwrap(wrapped, context, options)),
    close: () => inner.close?.() ?? Promise.resolve(),
  };
}
