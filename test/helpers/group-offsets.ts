import type { Kafka } from 'kafkajs';

/**
 * Whether consumer group `groupId` has committed, on every partition of `topic`, the partition's
 * end offset: every record read and, for a protect pipeline, its transaction committed with what
 * it wrote — nothing of the topic is left for the group to write. (For a topic written without
 * transactions: a transaction marker at its end would sit past the last record's offset.)
 */
export async function groupCaughtUp(kafka: Kafka, groupId: string, topic: string): Promise<boolean> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ends = await admin.fetchTopicOffsets(topic);
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return ends.every((end) => committed?.partitions.find((p) => p.partition === end.partition)?.offset === end.high);
  } finally {
    await admin.disconnect();
  }
}
