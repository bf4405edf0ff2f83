import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads a whole topic read_committed with Kafka's own Java client (the reference implementation
 * of transactions) and prints "partition offset value" per record. Run as a single-file source:
 * java -cp 'kafka libs/*' ReadCommitted.java BROKERS TOPIC
 */
public class ReadCommitted {
  public static void main(String[] args) {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    p.put("isolation.level", "read_committed");
    p.put("enable.auto.commit", "false");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
      List<TopicPartition> parts = new ArrayList<>();
      c.partitionsFor(args[1]).forEach(i -> parts.add(new TopicPartition(i.topic(), i.partition())));
      c.assign(parts);
      c.seekToBeginning(parts);
      Map<TopicPartition, Long> end = c.endOffsets(parts); // the last stable offsets, read_committed
      long deadline = System.currentTimeMillis() + 120_000;
      while (System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) System.out.println(r.partition() + " " + r.offset() + " " + r.value());
        boolean done = true;
        for (TopicPartition tp : parts) if (c.position(tp) < end.get(tp)) done = false;
        if (done) return;
      }
      System.exit(2);
    }
  }
}
