import rdkafka from '@confluentinc/kafka-javascript';
import type { LibrdKafkaError } from '@confluentinc/kafka-javascript';
import { KafkaError } from './kafka-error.ts';

const CODES = (rdkafka as unknown as { CODES: { ERRORS: Record<string, number> } }).CODES.ERRORS;
const NAMES = new Map(Object.entries(CODES).map(([name, code]) => [code, name.replace(/^ERR_+/, '')]));

/** A librdkafka error (or anything the binding threw) as a KafkaError. */
export function fromLibrdkafka(err: LibrdKafkaError | Error, what: string): KafkaError {
  const e = err as LibrdKafkaError & { message?: string };
  const code = typeof e.code === 'number' ? (NAMES.get(e.code) ?? String(e.code)) : 'CLIENT';
  const retriable = e.isRetriable ?? (e.isTxnRequiresAbort === true || !e.isFatal);
  return new KafkaError(code, `${what}: ${e.message ?? code}`, retriable, { cause: err, fatal: e.isFatal ?? false, brokerCode: typeof e.code === 'number' && e.code > 0 ? e.code : undefined });
}
