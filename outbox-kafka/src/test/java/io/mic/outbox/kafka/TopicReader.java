package io.mic.outbox.kafka;

import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Reads a whole topic from the beginning, without a consumer group. */
final class TopicReader {
  private TopicReader() {}

  /** Every record of {@code topic}, once at least {@code expected} have arrived, in partition then offset order. */
  static List<ConsumerRecord<byte[], byte[]>> readAtLeast(String bootstrap, String topic, int expected) {
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName(),
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName(),
        ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
      List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(10)).stream()
          .map(p -> new TopicPartition(topic, p.partition())).collect(Collectors.toList());
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
      await("at least " + expected + " records on " + topic).atMost(Duration.ofSeconds(30))
          .pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10)).until(() -> {
            consumer.poll(Duration.ofMillis(200)).forEach(records::add);
            return records.size() >= expected;
          });
      // whatever else is already there (duplicates) shows up within one more poll
      consumer.poll(Duration.ofMillis(300)).forEach(records::add);
      records.sort((a, b) -> a.partition() != b.partition() ? Integer.compare(a.partition(), b.partition())
          : Long.compare(a.offset(), b.offset()));
      return records;
    }
  }
}
