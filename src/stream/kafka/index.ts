/**
 * The Kafka front door of src/stream: the ports the pipelines and the responder talk to Kafka
 * through, the choice of client (each adapter loads only when chosen: librdkafka is a native
 * addon), and what both adapters share. Code outside src/stream/kafka imports only this file; no
 * kafkajs or librdkafka type passes it.
 */
export {
  headerValue, withHeaders,
  type Batch, type CaughtUp, type ConsumerEvents, type ConsumerPort, type Header, type Headers, type InRecord, type KafkaLog, type KafkaPort, type LookAhead, type OutRecord, type ProducerPort, type Transaction,
} from './ports.ts';
export { KafkaError } from './kafka-error.ts';
export { DEFAULT_STREAM_CLIENT, STREAM_CLIENTS, groupInstanceId, openKafkaPort, staticMembership, streamClient, type KafkaPortOptions, type StreamClient } from './open-port.ts';
export { isTransientKafkaFailure, openWithRetry } from './start-retry.ts';
export { BATCH_OVERHEAD, fitsAlone, recordBytes } from './record-size.ts';
export { killingInCommit } from './fault-injection.ts';
