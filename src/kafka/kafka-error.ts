import { layerFaultType } from '../engine/index.ts';

/**
 * A failure of the Kafka client itself, not of a record — a broker's refusal, a timeout, a fenced
 * producer, a topic configuration or committed offset that cannot be read — whichever adapter
 * met it: the one Kafka error type of src/stream/kafka, which both adapters wrap their client's
 * errors into (librdkafka-errors.ts, kafkajs-errors.ts). `code` names the failure (librdkafka's
 * error name without its ERR_ prefix: MSG_SIZE_TOO_LARGE, TIMED_OUT, …; the Kafka protocol error
 * kafkajs names: MESSAGE_TOO_LARGE, PRODUCER_FENCED, …, else kafkajs' error name without its
 * KafkaJS prefix; KAFKA_<name> for a committed-offset read refused for good; veil's own:
 * TOPIC_CONFIG_UNREADABLE, OFFSET_UNSTABLE, STATE, JAAS_CONFIG_INVALID, …),
 * `retriable` whether the same call may succeed later, `cause` the client's own error, `fatal`
 * whether the client instance is unusable (librdkafka), `brokerCode` the Kafka protocol code when
 * the broker answered one, `denied` whether a broker (or the OAuth token endpoint) refused this
 * client's credentials, certificate or permissions — which no retry fixes: the process's listeners
 * are told (denied.ts). Messages name topics, partitions and brokers, never record
 * contents or credentials; its code is logged, it never reaches a client of veil.
 *
 * It is src/kafka's fault type (the engine's layerFaultType, not a VeilError: no door answers
 * with it), without a table: the codes are the clients' own, open-ended, and each failure says
 * whether it is retriable.
 */
export class KafkaError extends layerFaultType() {
  readonly fatal: boolean;
  readonly brokerCode?: number;
  readonly denied: boolean;
  constructor(code: string, message: string, retriable: boolean, options?: { cause?: unknown; fatal?: boolean; brokerCode?: number; denied?: boolean }) {
    super(code, message, { cause: options?.cause, retriable });
    this.fatal = options?.fatal ?? false;
    this.denied = options?.denied ?? false;
    if (options?.brokerCode !== undefined) this.brokerCode = options.brokerCode;
  }
}
