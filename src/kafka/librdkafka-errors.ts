import rdkafka from '@confluentinc/kafka-javascript';
import type { LibrdKafkaError } from '@confluentinc/kafka-javascript';
import { KafkaError } from './kafka-error.ts';

const CODES = (rdkafka as unknown as { CODES: { ERRORS: Record<string, number> } }).CODES.ERRORS;
const NAMES = new Map(Object.entries(CODES).map(([name, code]) => [code, name.replace(/^ERR_+/, '')]));

/** librdkafka's own refusals (-169 ERR__AUTHENTICATION) and the Kafka protocol's (SASL authentication, authorization) */
const REFUSALS = new Set([-169, 29, 30, 31, 53, 58, 33 /* UNSUPPORTED_SASL_MECHANISM */]);
/** -181 ERR__SSL is a refusal when a certificate was (an untrusted or expired broker certificate, ours refused by its alert); a broken handshake is not */
const SSL = -181;
const CERTIFICATE_FAILURE = /certificate|alert/i;

/** A librdkafka error (or anything the binding threw) as a KafkaError; `denied` when it refuses this client's identity or permissions. */
export function fromLibrdkafka(err: LibrdKafkaError | Error, what: string): KafkaError {
  const e = err as LibrdKafkaError & { message?: string };
  const code = typeof e.code === 'number' ? (NAMES.get(e.code) ?? String(e.code)) : 'CLIENT';
  const denied = typeof e.code === 'number' && (REFUSALS.has(e.code) || (e.code === SSL && CERTIFICATE_FAILURE.test(e.message ?? '')));
  const retriable = !denied && (e.isRetriable ?? (e.isTxnRequiresAbort === true || !e.isFatal));
  return new KafkaError(code, `${what}: ${e.message ?? code}`, retriable, { cause: err, fatal: e.isFatal ?? false, brokerCode: typeof e.code === 'number' && e.code > 0 ? e.code : undefined, denied });
}
