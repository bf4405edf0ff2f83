import { KafkaError } from './kafka-error.ts';

type Listener = (error: KafkaError) => void;
const listeners = new Set<Listener>();

/**
 * What the process does when a broker (or the OAuth token endpoint) refuses this client's
 * credentials, certificate or permissions — a KafkaError `denied`, which no retry fixes and which
 * both clients would otherwise retry in the background for ever. A process-wide policy like the
 * last-resort handler (src/cli/last-resort.ts), so it is one registration at start rather than a
 * callback threaded through every store and pipeline: the command line registers one that logs a
 * line and exits non-zero. Tests in process register none: a refusal is then only the error.
 */
export function whenKafkaDenied(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Tells the listeners of `error` when it is a refusal; returns it (for `throw reportDenied(e)`). */
export function reportDenied<E>(error: E): E {
  if (error instanceof KafkaError && error.denied) for (const listener of listeners) listener(error);
  return error;
}
