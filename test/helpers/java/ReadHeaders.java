import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads a whole topic read_committed with Kafka's own Java client and prints, per record,
 * "partition offset valueHex" then each header in record order as " keyHex:valueHex", a null
 * value as " keyHex:-" (hex so that binary, empty and null values stay distinct). Run as a
 * single-file source: java -cp 'kafka libs/*' ReadHeaders.java BROKERS TOPIC [keys]; with
 * "keys", the record key's hex (or -) comes before the value's.
 */
public class ReadHeaders {
  static String hex(byte[] b) {
    if (b == null) return "-";
    StringBuilder s = new StringBuilder();
    for (byte x : b) s.append(String.format("%02x", x));
    return s.toString();
  }

  public static void main(String[] args) {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    p.put("isolation.level", "read_committed");
    p.put("enable.auto.commit", "false");
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
      List<TopicPartition> parts = new ArrayList<>();
      c.partitionsFor(args[1]).forEach(i -> parts.add(new TopicPartition(i.topic(), i.partition())));
      c.assign(parts);
      c.seekToBeginning(parts);
      Map<TopicPartition, Long> end = c.endOffsets(parts);
      long deadline = System.currentTimeMillis() + 120_000;
      while (System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
          StringBuilder line = new StringBuilder(r.partition() + " " + r.offset() + " " + (args.length > 2 ? hex(r.key()) + " " : "") + hex(r.value()));
          for (Header h : r.headers()) line.append(" ").append(hex(h.key().getBytes(java.nio.charset.StandardCharsets.UTF_8))).append(":").append(hex(h.value()));
          System.out.println(line);
        }
        boolean done = true;
        for (TopicPartition tp : parts) if (c.position(tp) < end.get(tp)) done = false;
        if (done) return;
      }
      System.exit(2);
    }
  }
}
