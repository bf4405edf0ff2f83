import { KafkaError } from './kafka-error.ts';

/** kafkajs' errors: a protocol error names its Kafka error (`type`); `retriable` is kafkajs' verdict. */
export interface KafkajsError {
  name?: string;
  type?: string;
  retriable?: boolean;
  message?: string;
}

/** The KafkaErrors that wrap a kafkajs error: kafkajs gets its own error back when one reaches its consumer loop. */
const wrapped = new WeakSet<KafkaError>();

/**
 * A kafkajs error as a KafkaError, as the librdkafka adapter's are (librdkafka-errors.ts): `code`
 * the Kafka protocol error kafkajs names (`type`: MESSAGE_TOO_LARGE, PRODUCER_FENCED, …), else
 * kafkajs' error name without its KafkaJS prefix (ConnectionError, NumberOfRetriesExceeded, …);
 * `retriable` kafkajs' own verdict; `cause` the kafkajs error (its causes kept). Anything that is
 * not a kafkajs error (veil's own, a KafkaError already) passes unchanged.
 */
export function fromKafkajs(err: unknown, what: string): unknown {
  const e = err as KafkajsError | undefined;
  if (!(err instanceof Error) || err instanceof KafkaError || !e?.name?.startsWith('KafkaJS')) return err;
  const error = new KafkaError(e.type ?? e.name.slice('KafkaJS'.length), `${what}: ${e.message ?? e.name}`, e.retriable === true, { cause: err });
  wrapped.add(error);
  return error;
}

/** Runs a kafkajs call, its failure as a KafkaError. */
export async function kafkajsCall<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    throw fromKafkajs(e, what);
  }
}

/**
 * What kafkajs' consumer loop gets of an error a batch handler threw: the kafkajs error a
 * KafkaError wraps, so that kafkajs decides on retries and restarts by its own error classes as
 * before; anything else as it is.
 */
export function toKafkajs(err: unknown): unknown {
  return err instanceof KafkaError && wrapped.has(err) ? err.cause : err;
}
