import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * bench:stream's Java baseline: the exactly-once consume → produce copy a Java engineer would write
 * with Kafka's own client (KIP-447: one transactional producer, one transaction per poll, the
 * consumed offsets sent with the consumer's group metadata), tuned for throughput, no veil code.
 *
 * java -cp CLASSES:KAFKA_LIBS/* ExactlyOnceCopy BROKERS SOURCE WARMUP_SINK SINK GROUP WARMUP_ROUNDS [consumer.K=V|producer.K=V ...]
 *
 * First a warm-up of the JIT in this JVM: SOURCE copied to WARMUP_SINK, up to WARMUP_ROUNDS
 * times, with clients and a group of their own, closed afterwards. Then it copies all of SOURCE to
 * SINK under GROUP with new clients — the copy the bench times, as it times veil's, between two
 * counts of GROUP's committed offsets — and prints "done RECORDS TRANSACTIONS" when every record
 * is committed.
 */
public class ExactlyOnceCopy {
  public static void main(String[] args) {
    String brokers = args[0], source = args[1], warmupSink = args[2], sink = args[3], group = args[4];
    int warmupRounds = Integer.parseInt(args[5]);
    Map<String, String> overrides = new HashMap<>();
    for (int i = 6; i < args.length; i++) overrides.put(args[i].substring(0, args[i].indexOf('=')), args[i].substring(args[i].indexOf('=') + 1));
    warmUp(brokers, source, warmupSink, group, overrides, warmupRounds);
    copy(brokers, source, sink, group, overrides, true);
  }

  /**
   * Copies SOURCE to WARMUP_SINK, each round with new clients and a new group, until a round's JIT
   * compilation took under 2% of its time or after `maxRounds`: C2 keeps compiling the client's
   * paths for several seconds on two busy cores, and a round of 100,000 records is not enough.
   * Prints "warm-up ROUND RECORDS TRANSACTIONS MS JIT_MS" per round.
   */
  static void warmUp(String brokers, String source, String warmupSink, String group, Map<String, String> overrides, int maxRounds) {
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    for (int round = 1; round <= maxRounds; round++) {
      long start = System.nanoTime(), compiled = jit.getTotalCompilationTime();
      long[] w = copy(brokers, source, warmupSink, group + ".warmup" + round, overrides, false);
      long ms = (System.nanoTime() - start) / 1_000_000, jitMs = jit.getTotalCompilationTime() - compiled;
      System.out.println("warm-up " + round + " " + w[0] + " " + w[1] + " " + ms + " " + jitMs);
      if (jitMs < ms / 50) return;
    }
  }

  /**
   * Copies SOURCE to SINK until all records present at the start are committed; returns
   * {records, transactions}. The copy the bench times then prints "done RECORDS TRANSACTIONS"
   * and waits for a line on stdin before it closes its clients, so that the bench reads this
   * process's threads' CPU while they still run.
   */
  static long[] copy(String brokers, String source, String sink, String group, Map<String, String> overrides, boolean timed) {
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig(brokers, group, overrides));
         KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig(brokers, group + ".tx", overrides))) {
      producer.initTransactions();
      List<TopicPartition> partitions = new ArrayList<>();
      consumer.partitionsFor(source).forEach(p -> partitions.add(new TopicPartition(p.topic(), p.partition())));
      // the bench's end: everything the source holds now (read_committed: its last stable offsets)
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
      Map<TopicPartition, Long> committed = new HashMap<>();
      consumer.committed(new HashSet<>(partitions)).forEach((tp, o) -> { if (o != null) committed.put(tp, o.offset()); });
      consumer.subscribe(List.of(source));
      long records = 0, transactions = 0;
      while (!reached(committed, end)) {
        ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(100));
        if (batch.isEmpty()) continue;
        producer.beginTransaction();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition tp : batch.partitions()) {
          List<ConsumerRecord<byte[], byte[]>> part = batch.records(tp);
          for (ConsumerRecord<byte[], byte[]> r : part) producer.send(new ProducerRecord<>(sink, null, r.key(), r.value(), r.headers()));
          offsets.put(tp, new OffsetAndMetadata(part.get(part.size() - 1).offset() + 1));
        }
        producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
        producer.commitTransaction();
        offsets.forEach((tp, o) -> committed.put(tp, o.offset()));
        records += batch.count();
        transactions++;
      }
      if (timed) awaitBench(records, transactions);
      return new long[] { records, transactions };
    }
  }

  static void awaitBench(long records, long transactions) {
    System.out.println("done " + records + " " + transactions);
    System.out.flush();
    try {
      System.in.read();
    } catch (java.io.IOException e) {
      // the bench is gone: nothing to wait for
    }
  }

  static boolean reached(Map<TopicPartition, Long> committed, Map<TopicPartition, Long> end) {
    for (Map.Entry<TopicPartition, Long> e : end.entrySet()) if (committed.getOrDefault(e.getKey(), 0L) < e.getValue()) return false;
    return true;
  }

  /**
   * The consumer, tuned: a poll returns up to 5,000 records, a transaction's worth (each
   * transaction costs the same round trips whatever its size, so records per transaction is what
   * exactly-once throughput is about: 5,000 measured better here than 2,000 and much better than
   * 500; veil's batches are up to 2,000 records per partition, a transaction each), fetches of up
   * to 2 MB per partition so that one fetch round fills a poll, and a 10 ms backoff.
   */
  static Properties consumerConfig(String brokers, String group, Map<String, String> overrides) {
    Properties p = new Properties();
    p.put("bootstrap.servers", brokers);
    p.put("group.id", group);
    p.put("isolation.level", "read_committed");
    p.put("enable.auto.commit", "false");
    p.put("auto.offset.reset", "earliest");
    p.put("max.poll.records", "5000");
    p.put("max.partition.fetch.bytes", Integer.toString(2 << 20));
    p.put("fetch.min.bytes", "1");
    p.put("fetch.max.wait.ms", "100");
    p.put("retry.backoff.ms", "10");
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    apply(p, "consumer.", overrides);
    return p;
  }

  /**
   * The producer, tuned: idempotent and transactional; a 10 ms backoff (with the default 100 ms a
   * transaction's AddPartitionsToTxn that meets the previous transaction's markers still being
   * written — CONCURRENT_TRANSACTIONS — waits 100 ms, which makes the copy as slow as its
   * broker's marker writes); batches of up to 256 KB per partition with a short linger, since a
   * transaction's records are all sent at once and flushed by the commit.
   */
  static Properties producerConfig(String brokers, String transactionalId, Map<String, String> overrides) {
    Properties p = new Properties();
    p.put("bootstrap.servers", brokers);
    p.put("transactional.id", transactionalId);
    p.put("enable.idempotence", "true");
    p.put("acks", "all");
    p.put("linger.ms", "5");
    p.put("batch.size", Integer.toString(256 << 10));
    p.put("buffer.memory", Integer.toString(64 << 20));
    p.put("retry.backoff.ms", "10");
    p.put("retry.backoff.max.ms", "100");
    p.put("key.serializer", ByteArraySerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());
    apply(p, "producer.", overrides);
    return p;
  }

  /** Overrides from the command line, so that other tunings can be tried without editing this file. */
  static void apply(Properties p, String prefix, Map<String, String> overrides) {
    overrides.forEach((k, v) -> { if (k.startsWith(prefix)) p.put(k.substring(prefix.length()), v); });
  }
}
