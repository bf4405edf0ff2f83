/**
 * The Kafka clients the stream tests run on: both adapters by default, so each keeps passing the
 * same verification; VEIL_TEST_STREAM_CLIENTS=librdkafka (or kafkajs) narrows a run to one.
 */
export function streamClients(): string[] {
  return (process.env.VEIL_TEST_STREAM_CLIENTS ?? 'kafkajs,librdkafka').split(',').map((c) => c.trim()).filter(Boolean);
}
