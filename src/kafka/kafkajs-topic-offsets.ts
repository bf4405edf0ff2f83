import type { Admin } from 'kafkajs';

export interface TopicOffsetsOptions {
  /** how long retriable answers are retried before the last one is thrown (default 15 s) */
  timeoutMs?: number;
  /** injected for tests */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

type Offsets = Awaited<ReturnType<Admin['fetchTopicOffsets']>>;

const isRetriable = (e: unknown) => (e as { retriable?: unknown } | null)?.retriable === true;

/**
 * A topic's offsets by partition, read just after the topic was created or a broker started.
 * A broker can already be named leader in the metadata while it does not yet serve the partition:
 * it answers NOT_LEADER_OR_FOLLOWER or LEADER_NOT_AVAILABLE, both retriable, and kafkajs's
 * `fetchTopicOffsets` gives up on the first such answer (it retries an unknown topic only). Those
 * are retried here, the metadata refreshed before each try, with a doubling pause up to 1 s and
 * within `timeoutMs`; any other error is thrown at once.
 */
export async function fetchTopicOffsetsOnceLed(admin: Admin, topic: string, options: TopicOffsetsOptions = {}): Promise<Offsets> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const deadline = now() + (options.timeoutMs ?? 15_000);
  for (let pause = 100; ; pause = Math.min(pause * 2, 1_000)) {
    try {
      return await admin.fetchTopicOffsets(topic);
    } catch (e) {
      if (!isRetriable(e) || now() + pause > deadline) throw e;
    }
    await sleep(pause);
    await admin.fetchTopicMetadata({ topics: [topic] }).catch(() => undefined);
  }
}
