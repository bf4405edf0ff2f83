/**
 * Whether a failure to reach Kafka may pass by itself: the client marks it retriable (a broker
 * restarting refuses connections, a leader is being elected), or it gave up retrying one that was.
 */
export function isTransientKafkaFailure(error: unknown): boolean {
  for (let e = error as { retriable?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (e.retriable === true) return true;
  }
  return false;
}

/**
 * Runs `open` (a consumer's connect and subscribe) until it succeeds, retrying transient failures
 * with backoff (0.5 s doubling to 5 s) for at most `timeoutMs`: a process started while its
 * broker restarts waits for it rather than exit. Anything else, or the deadline, is thrown.
 * `reset` undoes a half-done attempt before the next.
 */
export async function openWithRetry(
  open: () => Promise<void>,
  options: { timeoutMs: number; reset: () => Promise<void>; onRetry: (error: Error, inMs: number) => void; stopped?: () => boolean; now?: () => number },
): Promise<void> {
  const now = options.now ?? Date.now;
  const deadline = now() + options.timeoutMs;
  for (let wait = 500; ; wait = Math.min(wait * 2, 5000)) {
    try {
      await open();
      return;
    } catch (e) {
      if (!isTransientKafkaFailure(e) || options.stopped?.() || now() + wait > deadline) throw e;
      options.onRetry(e as Error, wait);
      await options.reset();
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
