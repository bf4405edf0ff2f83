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

/**
 * The refusals librdkafka says in words: its error events reach the binding without their code
 * (-1, "authentication failure", "ssl error"), and the reason — which certificate, which alert —
 * only in its FAIL log lines. A transport failure or a broken handshake says none of these.
 */
const REFUSAL_TEXT: readonly [RegExp, string][] = [
  [/SASL authentication error|^authentication failure$/i, 'AUTHENTICATION_FAILED'],
  [
    /certificate verify failed|alert (bad certificate|certificate required|unknown ca|certificate expired|certificate revoked|certificate unknown|access denied)|ssl\/tls alert (bad certificate|certificate required|unknown ca)/i,
    'TLS_CERTIFICATE_REFUSED',
  ],
];

/** A librdkafka log line (severity, facility, text) as a refusal of this client, when it is one. */
export function refusalInLog(severity: number, text: string): KafkaError | undefined {
  if (severity > 3) return undefined;
  const match = REFUSAL_TEXT.find(([re]) => re.test(text));
  // the line's own words: brokers, mechanism, the TLS alert; librdkafka never logs a credential
  return match ? new KafkaError(match[1], text.replace(/^\[thrd:[^\]]*\]: /, ''), false, { denied: true }) : undefined;
}

/** A librdkafka error (or anything the binding threw) as a KafkaError; `denied` when it refuses this client's identity or permissions. */
export function fromLibrdkafka(err: LibrdKafkaError | Error, what: string): KafkaError {
  const e = err as LibrdKafkaError & { message?: string };
  if (e.code === -1 && /^authentication failure$/i.test(e.message ?? ''))
    return new KafkaError('AUTHENTICATION_FAILED', `${what}: ${e.message}`, false, { cause: err, denied: true });
  const code = typeof e.code === 'number' ? (NAMES.get(e.code) ?? String(e.code)) : 'CLIENT';
  const denied = typeof e.code === 'number' && (REFUSALS.has(e.code) || (e.code === SSL && CERTIFICATE_FAILURE.test(e.message ?? '')));
  const retriable = !denied && (e.isRetriable ?? (e.isTxnRequiresAbort === true || !e.isFatal));
  return new KafkaError(code, `${what}: ${e.message ?? code}`, retriable, {
    cause: err,
    fatal: e.isFatal ?? false,
    brokerCode: typeof e.code === 'number' && e.code > 0 ? e.code : undefined,
    denied,
  });
}

/**
 * How long a client's connect waits for the cluster's metadata (the binding's default: 30 s). The
 * wait holds a libuv worker that the process's exit joins, so a process told to exit (Kafka
 * refused it) would hang for as long; a connect that times out is retriable and tried again.
 */
export const CONNECT_TIMEOUT_MS = 10_000;
