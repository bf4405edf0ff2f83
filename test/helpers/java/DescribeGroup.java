import java.util.*;
import org.apache.kafka.clients.admin.*;

/**
 * Prints a consumer group's members with Kafka's own AdminClient, one per line:
 * "groupInstanceId-or-- clientId partitionCount". Run as a single-file source:
 * java -cp 'kafka libs/*' DescribeGroup.java BROKERS GROUP
 */
public class DescribeGroup {
  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    try (Admin admin = Admin.create(p)) {
      ConsumerGroupDescription group = admin.describeConsumerGroups(List.of(args[1])).all().get().get(args[1]);
      System.out.println("state " + group.state());
      for (MemberDescription m : group.members()) {
        System.out.println("member " + m.groupInstanceId().orElse("-") + " " + m.clientId() + " " + m.assignment().topicPartitions().size());
      }
    }
  }
}
