import rdkafka from '@confluentinc/kafka-javascript';
import type { LibrdKafkaError } from '@confluentinc/kafka-javascript';

const CODES = (rdkafka as unknown as { CODES: { ERRORS: Record<string, number> } }).CODES.ERRORS;
const NAMES = new Map(Object.entries(CODES).map(([name, code]) => [code, name.replace(/^ERR_+/, '')]));

/**
 * A failure of the librdkafka client (a broker's refusal, a timeout, a fenced producer), typed:
 * `code` is librdkafka's error name without its ERR_ prefix (MSG_SIZE_TOO_LARGE, TIMED_OUT,
 * PRODUCER_FENCED, …), `brokerCode` the Kafka protocol code when the broker answered one, and
 * `retriable` whether the same call may succeed later. Messages are librdkafka's own: they name
 * topics, partitions and brokers, never record contents.
 */
export class KafkaClientError extends Error {
  readonly code: string;
  readonly retriable: boolean;
  readonly fatal: boolean;
  readonly brokerCode?: number;
  constructor(code: string, message: string, retriable: boolean, options?: { cause?: unknown; fatal?: boolean; brokerCode?: number }) {
    super(message, options);
    this.name = 'KafkaClientError';
    this.code = code;
    this.retriable = retriable;
    this.fatal = options?.fatal ?? false;
    this.brokerCode = options?.brokerCode;
  }
}

/** A librdkafka error (or anything the binding threw) as a KafkaClientError. */
export function fromLibrdkafka(err: LibrdKafkaError | Error, what: string): KafkaClientError {
  const e = err as LibrdKafkaError & { message?: string };
  const code = typeof e.code === 'number' ? (NAMES.get(e.code) ?? String(e.code)) : 'CLIENT';
  const retriable = e.isRetriable ?? (e.isTxnRequiresAbort === true || !e.isFatal);
  return new KafkaClientError(code, `${what}: ${e.message ?? code}`, retriable, { cause: err, fatal: e.isFatal ?? false, brokerCode: typeof e.code === 'number' && e.code > 0 ? e.code : undefined });
}
