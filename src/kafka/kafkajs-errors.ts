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
  const refusal = deniedBy(err);
  if (refusal) return new KafkaError(refusal.code, `${what}: ${refusal.message}`, false, { cause: err, denied: true });
  const error = new KafkaError(e.type ?? e.name.slice('KafkaJS'.length), `${what}: ${e.message ?? e.name}`, e.retriable === true, { cause: err });
  wrapped.add(error);
  return error;
}

/** The Kafka protocol errors that refuse this client's identity or permissions: no retry helps. */
const REFUSALS = new Set([
  'SASL_AUTHENTICATION_FAILED',
  'UNSUPPORTED_SASL_MECHANISM',
  'ILLEGAL_SASL_STATE',
  'TOPIC_AUTHORIZATION_FAILED',
  'GROUP_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
  'DELEGATION_TOKEN_AUTHORIZATION_FAILED',
]);
/** Node's TLS errors of a certificate refused on either side (an untrusted, expired or misnamed broker certificate; ours refused by the broker: ERR_SSL_SSL/TLS_ALERT_CERTIFICATE_UNKNOWN, the slash OpenSSL's) */
const TLS_REFUSAL =
  /^(ERR_TLS_CERT_ALTNAME_INVALID|CERT_[A-Z_]+|[A-Z_]*(SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER)[A-Z_]*|ERR_SSL_[A-Z0-9_/]*(ALERT|CERTIFICATE|WRONG_VERSION)[A-Z0-9_/]*)$/;

/**
 * Whether a kafkajs error (or one it wraps: retries exhausted keep their cause) is a refusal of
 * this client: a SASL authentication failure, an authorization failure, or a TLS certificate
 * failure. Its code: AUTHENTICATION_FAILED, the Kafka error (TOPIC_AUTHORIZATION_FAILED, …) or
 * TLS_CERTIFICATE_REFUSED; its message kafkajs' own (brokers and reasons, never a credential).
 */
export function deniedBy(err: unknown): { code: string; message: string } | undefined {
  let e = err as (KafkajsError & { code?: unknown; cause?: unknown; originalError?: unknown }) | undefined;
  for (let depth = 0; e && depth < 6; depth++) {
    if (e.name === 'KafkaJSSASLAuthenticationError') return { code: 'AUTHENTICATION_FAILED', message: e.message ?? e.name };
    if (e.type && REFUSALS.has(e.type))
      return { code: e.type === 'SASL_AUTHENTICATION_FAILED' ? 'AUTHENTICATION_FAILED' : e.type, message: e.message ?? e.type };
    if (e.name === 'KafkaJSConnectionError' && typeof e.code === 'string' && TLS_REFUSAL.test(e.code))
      return { code: 'TLS_CERTIFICATE_REFUSED', message: `${e.message ?? e.name} (${e.code})` };
    if (e instanceof KafkaError) return e.denied ? { code: e.code, message: e.message } : undefined;
    e = (e.cause ?? e.originalError) as typeof e;
  }
  return undefined;
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
