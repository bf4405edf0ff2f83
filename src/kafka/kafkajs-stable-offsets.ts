import type { Admin } from 'kafkajs';
import { KafkaError } from './kafka-error.ts';
import type { KafkajsError } from './kafkajs-errors.ts';

/**
 * Stable committed offsets (KIP-447 `require_stable`) through kafkajs' admin client: OffsetFetch
 * v7, which veil's kafkajs patch adds (patches/kafkajs/03-offset-fetch-v7.patch). Part of the
 * kafkajs adapter.
 *
 * Why: after a transaction commits, the group coordinator applies its offsets to its cache in a
 * task of its own; during a coordinator load (a broker restart) that task waits behind the load,
 * and a plain OffsetFetch meanwhile returns the offset from before the transaction — a new owner
 * would write that transaction's records again. With require_stable the broker answers
 * UNSTABLE_OFFSET_COMMIT while a transactional offset of the partition is pending, and this
 * retries until the offset is stable. One partition per request: another partition's pending
 * offset does not hold this one up.
 */

/**
 * Errors no retry can fix: a Kafka error the protocol calls non-retriable (an unknown group, an
 * authorization failure), a broker without OffsetFetch v7. kafkajs also calls its own give-ups
 * (coordinator not found, retries exhausted) non-retriable: those are retried here until the
 * deadline, as a broker restart or coordinator move needs.
 */
const permanent = (e: KafkajsError) =>
  (e.name === 'KafkaJSProtocolError' && e.retriable === false) ||
  e.name === 'KafkaJSServerDoesNotSupportApiKey' ||
  (e.name === 'KafkaJSNonRetriableError' && /OffsetFetch v7/.test(e.message ?? ''));

/**
 * A committed-offset reader: resolves with the partition's stable committed offset (null if
 * none), retrying while the coordinator loads, moves, or holds a pending transactional offset
 * for it — for at most `timeoutMs`. A permanent error rejects at once.
 */
export function stableOffsetFetch(
  admin: () => Promise<Admin>,
  timeoutMs = 60_000,
): { fetch(groupId: string, topic: string, partition: number): Promise<string | null> } {
  return {
    async fetch(groupId, topic, partition) {
      const deadline = Date.now() + timeoutMs;
      let last = 'none';
      for (let attempt = 0; Date.now() < deadline; attempt++) {
        try {
          const topics = await (await admin()).fetchOffsets({ groupId, topics: [{ topic, partitions: [partition] }], requireStable: true });
          const offset = topics.find((t) => t.topic === topic)?.partitions.find((p) => p.partition === partition)?.offset;
          if (offset === undefined) throw new KafkaError('OFFSET_MISSING', `the OffsetFetch answer holds no offset for ${topic}/${partition}`, false);
          return offset.startsWith('-') ? null : offset;
        } catch (e) {
          if (e instanceof KafkaError) throw e;
          const error = e as KafkajsError;
          if (permanent(error)) {
            throw new KafkaError(
              error.type ? `KAFKA_${error.type}` : 'OFFSET_FETCH_FAILED',
              `OffsetFetch for ${topic}/${partition} failed: ${error.type ?? error.name}`,
              false,
              { cause: e },
            );
          }
          // kafkajs' messages name brokers and errors, never record contents
          last = error.type ?? `${error.name}: ${error.message}`;
        }
        await new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** Math.min(attempt, 5))));
      }
      throw new KafkaError(
        'OFFSET_UNSTABLE',
        `the committed offset of ${topic}/${partition} did not become stable within ${timeoutMs} ms (last: ${last})`,
        true,
      );
    },
  };
}
