/**
 * Kafka's one home (issue 40): the ports the stream pipelines and the unprotect responder talk to
 * Kafka through, the choice of client (each adapter loads only when chosen: librdkafka is a native
 * addon), what both adapters share, and the admin calls src/control and src/subjects share. Code
 * outside src/kafka imports only this file; no kafkajs or librdkafka type passes it (lint rule
 * veil/kafka-home).
 */
export {
  headerValue,
  withHeaders,
  type Batch,
  type CaughtUp,
  type ConsumerEvents,
  type ConsumerPort,
  type Header,
  type Headers,
  type InRecord,
  type KafkaLog,
  type KafkaPort,
  type LookAhead,
  type OutRecord,
  type ProducerPort,
  type Transaction,
} from './ports.ts';
export { KafkaError } from './kafka-error.ts';
export { DEFAULT_STREAM_CLIENT, STREAM_CLIENTS, groupInstanceId, openKafkaPort, streamClient, type KafkaPortOptions, type StreamClient } from './open-port.ts';
export { isTransientKafkaFailure, openWithRetry } from './start-retry.ts';
export { BATCH_OVERHEAD, fitsAlone, recordBytes } from './record-size.ts';
export { killingInCommit } from './fault-injection.ts';
export {
  CONTROL_SCOPE,
  DEFAULT_BROKERS,
  MAIN_SCOPE,
  SUBJECT_SCOPE,
  controlKafkaConnection,
  kafkaConnection,
  plainConnection,
  subjectKafkaConnection,
  type ConnectionOptions,
  type KafkaConnection,
  type SecurityProtocol,
} from './client-settings.ts';
export { KAFKA_PROPERTIES, REGISTRY_PROPERTIES, readEnvProperties, readPropertiesFile, registryEnvName, type PropertyValue } from './client-properties.ts';
export { Secret } from './secret.ts';
export { certificateFile, privateKeyFile, type PemFile } from './tls-files.ts';
export { reportDenied, whenKafkaDenied } from './denied.ts';
export { secretsOf } from './secret-scrub.ts';
export type { CompactedTopic, CompactedTopicOptions, TopicBatch, TopicRecord } from './kafkajs-compacted-topic.ts';

export type { TopicSample } from './kafkajs-topic-sampler.ts';

/** Samples a topic's committed records (kafkajs-topic-sampler.ts), loading kafkajs only then. */
export const sampleTopic = async (...args: Parameters<typeof import('./kafkajs-topic-sampler.ts').sampleTopic>) =>
  (await import('./kafkajs-topic-sampler.ts')).sampleTopic(...args);

/** Opens a compacted topic (kafkajs-compacted-topic.ts), loading kafkajs only then: a process on local stores never loads it. */
export const openCompactedTopic = async (options: import('./kafkajs-compacted-topic.ts').CompactedTopicOptions) =>
  (await import('./kafkajs-compacted-topic.ts')).CompactedTopic.open(options);
