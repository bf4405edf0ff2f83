// The bare librdkafka exactly-once copy for bench:stream: Confluent's consume → transform →
// produce pattern (one transactional producer, offsets sent with the consumer's group metadata,
// KIP-447) on the same binding veil's librdkafka adapter uses, without any veil code.
import rdkafka from '@confluentinc/kafka-javascript';
import type { Assignment, KafkaConsumer, LibrdKafkaError, Message, Producer } from '@confluentinc/kafka-javascript';

const { KafkaConsumer: Consumer, Producer: NativeProducer } = rdkafka as unknown as { KafkaConsumer: typeof KafkaConsumer; Producer: typeof Producer };

const call = (run: (cb: (err: LibrdKafkaError | null | undefined) => void) => void) =>
  new Promise<void>((resolve, reject) => run((err) => (err ? reject(err) : resolve())));

/** `timed` measures the copy after its warm-up (bench/stream.ts). */
export async function bareLibrdkafka(
  brokers: string,
  source: string,
  sink: string,
  timed: (groupId: string, topic: string) => Promise<{ rate: number; cpu: number; threads: string }>,
): Promise<{ rate: number; cpu: number; batches: number; threads: string }> {
  const groupId = `bench-bare-rd-${source}`;
  const consumer = new Consumer(
    {
      'bootstrap.servers': brokers,
      'group.id': groupId,
      'enable.auto.commit': false,
      'isolation.level': 'read_committed',
      'fetch.wait.max.ms': 100,
      rebalance_cb: function (this: KafkaConsumer, err: LibrdKafkaError, assignment: Assignment[]) {
        if (err.code === -175) this.assign(assignment);
        else this.unassign();
      },
    } as never,
    { 'auto.offset.reset': 'earliest' },
  );
  const producer = new NativeProducer({
    'bootstrap.servers': brokers,
    'transactional.id': `${groupId}.tx`,
    'enable.idempotence': true,
    'linger.ms': 2,
    dr_cb: false,
    partitioner: 'murmur2_random',
  });
  await new Promise<void>((resolve, reject) => consumer.connect({}, (err) => (err ? reject(err) : resolve())));
  await new Promise<void>((resolve, reject) => producer.connect({}, (err) => (err ? reject(err) : resolve())));
  producer.setPollInBackground(true);
  await call((cb) => producer.initTransactions(30_000, cb));
  consumer.setDefaultConsumeTimeout(100);
  consumer.subscribe([source]);
  let batches = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const messages = await new Promise<Message[]>((resolve, reject) => consumer.consume(2000, (err, ms) => (err ? reject(err) : resolve(ms))));
      if (!messages.length) continue;
      await call((cb) => producer.beginTransaction(cb));
      const next = new Map<string, { topic: string; partition: number; offset: number }>();
      for (const m of messages) {
        producer.produce(sink, null, m.value, m.key as Buffer | undefined, undefined, undefined, m.headers as never);
        next.set(`${m.partition}`, { topic: m.topic, partition: m.partition, offset: m.offset + 1 });
      }
      await call((cb) => producer.sendOffsetsToTransaction([...next.values()], consumer, 30_000, cb));
      await call((cb) => producer.commitTransaction(60_000, cb));
      batches++;
    }
  })();
  const cost = await timed(groupId, source);
  running = false;
  await loop;
  await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
  await new Promise<void>((resolve) => producer.disconnect(5000, () => resolve()));
  return { ...cost, batches };
}
