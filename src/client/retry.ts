import { clientError, VeilClientError } from './errors.ts';

/** Time as the client sees it; tests inject a fake one. */
export interface Clock {
  now(): number;
  /** resolves after `ms`, or rejects with the signal's reason when it aborts first */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

export interface RetryOptions {
  /** attempts in all, the first included (default 4) */
  maxAttempts?: number;
  /** the first backoff ceiling (default 100 ms); it doubles per attempt */
  baseDelayMs?: number;
  /** no backoff ceiling above this (default 5 s) */
  maxDelayMs?: number;
  /** the whole operation, attempts and waits included, ends by then (default 30 s) */
  deadlineMs?: number;
  /** uniform in [0, 1); tests inject a fixed one */
  random?: () => number;
}

export type RetryPolicy = Required<RetryOptions>;

export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  return {
    maxAttempts: Math.max(1, Math.floor(options.maxAttempts ?? 4)),
    baseDelayMs: options.baseDelayMs ?? 100,
    maxDelayMs: options.maxDelayMs ?? 5_000,
    deadlineMs: options.deadlineMs ?? 30_000,
    random: options.random ?? Math.random,
  };
}

/**
 * Exponential backoff with full jitter (a uniform wait in [0, min(max, base·2^n))), so clients
 * that failed together do not come back together; a Retry-After from the service is a floor.
 */
export function backoffMs(policy: RetryPolicy, retry: number, retryAfterMs: number | undefined): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  const jittered = Math.floor(policy.random() * ceiling);
  return Math.max(jittered, retryAfterMs ?? 0);
}

/** Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date; undefined when absent or unreadable. */
export function parseRetryAfter(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** What one attempt may see: when the whole operation must end, and a signal that says it ended. */
export interface AttemptContext {
  deadline: number;
  signal: AbortSignal;
  attempt: number;
}

/**
 * Runs `attempt` until it succeeds, fails with a non-retriable error, runs out of attempts or
 * would have to wait past the deadline; then the last error is thrown. Only
 * VeilClientError.retriable decides; anything else thrown by an attempt counts as a network error.
 */
export async function withRetry<T>(
  policy: RetryPolicy,
  clock: Clock,
  signal: AbortSignal | undefined,
  attempt: (ctx: AttemptContext) => Promise<T>,
): Promise<T> {
  const started = clock.now();
  const deadline = started + policy.deadlineMs;
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal!.reason);
  if (signal?.aborted) throw clientError('ABORTED', { cause: signal.reason });
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (let n = 0; ; n++) {
      try {
        return await attempt({ deadline, signal: controller.signal, attempt: n });
      } catch (e) {
        if (signal?.aborted) throw clientError('ABORTED', { cause: signal.reason });
        const error = e instanceof VeilClientError ? e : clientError('NETWORK_ERROR', { cause: e });
        // an inner retry loop (the token request) gave up already: retrying it again would multiply attempts
        if (!error.retriable || exhausted.has(error) || n + 1 >= policy.maxAttempts) throw exhaust(error);
        const wait = backoffMs(policy, n, error.retryAfterMs);
        // waiting past the deadline cannot help: the caller gets the error itself (code, Retry-After)
        if (clock.now() + wait >= deadline) throw exhaust(error);
        try {
          await clock.sleep(wait, controller.signal);
        } catch (reason) {
          throw clientError('ABORTED', { cause: reason });
        }
      }
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

const exhausted = new WeakSet<VeilClientError>();

function exhaust(error: VeilClientError): VeilClientError {
  exhausted.add(error);
  return error;
}
