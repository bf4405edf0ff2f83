import type { Assignment, KafkaConsumer, LibrdKafkaError } from '@confluentinc/kafka-javascript';
import type { PartitionQueues } from './librdkafka-partition-queues.ts';
import type { KafkaLog } from './ports.ts';

const ASSIGN = -175;
const REVOKE = -174;

/** What a rebalance does with the native consumer. */
export type RebalanceTarget = Pick<KafkaConsumer, 'assign' | 'unassign' | 'committed' | 'queryWatermarkOffsets'>;

/**
 * The consumer's rebalance callback (eager protocol): an assignment becomes the owned partitions'
 * fresh queues and is reported (`assigned`); a revocation drops them — batches in flight finish
 * or fail on their own: KIP-447 refuses their offsets once the generation moved on, and the
 * partition's next owner fences their transactional id. A group that starts at the latest offset
 * resolves its start positions before it assigns: librdkafka resolves "latest" only at the first
 * fetch, so a record written between the assignment and that fetch would be skipped. A later
 * rebalance overtakes one still resolving.
 */
export function rebalancer(options: {
  queues: PartitionQueues;
  latest: () => boolean;
  assigned: (byTopic: Record<string, number[]>) => void;
  log: KafkaLog;
}): (consumer: RebalanceTarget, err: LibrdKafkaError, assignment: Assignment[]) => void {
  let generation = 0;
  const own = (assignment: Assignment[]) => options.assigned(options.queues.own(assignment));
  return (consumer, err, assignment) => {
    const current = ++generation;
    try {
      if (err.code === ASSIGN && options.latest()) {
        void startPositions(consumer, assignment).then(
          (positioned) => {
            if (current !== generation) return;
            consumer.assign(positioned);
            own(assignment);
          },
          (e: unknown) => options.log('warn', 'cannot resolve start offsets', { code: (e as { code?: string }).code }),
        );
      } else if (err.code === ASSIGN) {
        consumer.assign(assignment);
        own(assignment);
      } else if (err.code === REVOKE) {
        options.queues.drop();
        consumer.unassign();
      }
    } catch (e) {
      options.log('warn', 'rebalance failed', { error: (e as Error).name, code: (e as { code?: unknown }).code });
    }
  };
}

/** Each partition's committed offset, else its end (a new group that starts at the latest offset). */
export async function startPositions(consumer: Pick<KafkaConsumer, 'committed' | 'queryWatermarkOffsets'>, assignment: Assignment[]): Promise<Assignment[]> {
  const committed = await new Promise<{ topic: string; partition: number; offset?: number }[]>((resolve, reject) =>
    consumer.committed(
      assignment.map(({ topic, partition }) => ({ topic, partition })),
      10_000,
      (err, tps) => (err ? reject(err) : resolve(tps)),
    ),
  );
  return Promise.all(
    assignment.map(async ({ topic, partition }) => {
      const offset = committed.find((c) => c.topic === topic && c.partition === partition)?.offset;
      if (offset !== undefined && offset >= 0) return { topic, partition, offset };
      const end = await new Promise<number>((resolve, reject) =>
        consumer.queryWatermarkOffsets(topic, partition, 10_000, (err, w) => (err ? reject(err) : resolve(w.highOffset))),
      );
      return { topic, partition, offset: end };
    }),
  );
}
