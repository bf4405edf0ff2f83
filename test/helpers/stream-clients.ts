/**
 * The Kafka clients `veil stream protect` is verified on, one run of a test per client (passed
 * to the process as VEIL_STREAM_CLIENT). VEIL_TEST_STREAM_CLIENTS narrows the list, e.g.
 * `VEIL_TEST_STREAM_CLIENTS=kafkajs`.
 */
export function streamClients(): string[] {
  return (process.env.VEIL_TEST_STREAM_CLIENTS ?? 'kafkajs,librdkafka')
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
}
