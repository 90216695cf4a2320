package io.mic.outbox.kafka;

import io.mic.outbox.BrokerScan;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.kafka.internal.BootstrapServers;
import io.mic.outbox.kafka.internal.KafkaErrors;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Scans a Kafka topic and collects the {@code x-event-id} headers of its records: on every partition it seeks
 * by timestamp ({@code offsetsForTimes}) to the first record at or after the start, and reads up to the end
 * offsets taken when the scan began. It joins no consumer group and commits nothing.
 *
 * <p>Record timestamps come from the producer's clock while {@code created_at} comes from the database's,
 * so the scan starts {@link BrokerScan#CLOCK_MARGIN} early.
 *
 * <pre>{@code
 * Set<String> ids = new KafkaTopicScan("kafka:9092", null, Map.of("security.protocol", "SSL"))
 *     .eventIds("order.created", from);
 * }</pre>
 */
public final class KafkaTopicScan implements BrokerScan {
  /** How long a metadata or offsets request may take ({@code default.api.timeout.ms}, unless given). */
  public static final Duration DEFAULT_API_TIMEOUT = Duration.ofSeconds(30);
  private static final Duration STALLED = Duration.ofSeconds(30);

  private final String bootstrap;
  private final String kafkaTopic;
  private final Map<String, String> properties;

  /**
   * @param kafkaTopic the Kafka topic, or {@code null} when it is the event topic (the publisher's default)
   * @param properties more consumer settings (security, timeouts), may be empty
   * @throws InvalidConfigurationException {@code bootstrap} holds credentials ({@code user:secret@host})
   */
  public KafkaTopicScan(String bootstrap, String kafkaTopic, Map<String, String> properties) {
    BootstrapServers.requireNoCredentials("bootstrap", bootstrap, "the sasl.jaas.config setting");
    this.bootstrap = bootstrap;
    this.kafkaTopic = kafkaTopic;
    this.properties = Map.copyOf(properties);
  }

  /**
   * @throws InvalidConfigurationException the topic does not exist
   * @throws ScanFailedException the cluster could not be read: the client's reason, or no progress for 30 s
   */
  @Override
  public Set<String> eventIds(String topic, Instant from) {
    String name = kafkaTopic != null ? kafkaTopic : topic;
    try {
      return scan(name, from);
    } catch (KafkaException e) {
      throw new ScanFailedException("cannot read Kafka topic " + name + " at " + bootstrap + ": " + KafkaErrors.describe(e),
          e);
    }
  }

  private Set<String> scan(String name, Instant from) {
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings())) {
      List<PartitionInfo> infos = consumer.partitionsFor(name);
      if (infos == null || infos.isEmpty()) {
        throw new InvalidConfigurationException("Kafka topic " + name + " does not exist on " + bootstrap);
      }
      List<TopicPartition> partitions = infos.stream().map(p -> new TopicPartition(name, p.partition())).toList();
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
      long startMillis = from.minus(CLOCK_MARGIN).toEpochMilli();
      Map<TopicPartition, OffsetAndTimestamp> start =
          consumer.offsetsForTimes(partitions.stream().collect(Collectors.toMap(p -> p, p -> startMillis)));
      Map<TopicPartition, Long> remaining = new HashMap<>();
      for (TopicPartition p : partitions) {
        OffsetAndTimestamp first = start.get(p);
        if (first != null && first.offset() < end.get(p)) { // null: no record at or after the start
          remaining.put(p, end.get(p));
        }
      }
      Set<String> ids = new HashSet<>();
      consumer.assign(remaining.keySet());
      remaining.keySet().forEach(p -> consumer.seek(p, start.get(p).offset()));
      long lastProgress = System.nanoTime();
      while (!remaining.isEmpty()) {
        boolean progress = false;
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          TopicPartition p = new TopicPartition(r.topic(), r.partition());
          Long stop = remaining.get(p);
          if (stop != null && r.offset() < stop) {
            Header id = r.headers().lastHeader(OutboxHeaders.EVENT_ID);
            if (id != null && id.value() != null) {
              ids.add(new String(id.value(), StandardCharsets.UTF_8));
            }
          }
          progress = true;
        }
        // the position passes the end offset also over transaction markers, which poll() never returns
        if (remaining.keySet().removeIf(p -> consumer.position(p) >= remaining.get(p))) {
          consumer.assign(remaining.keySet());
          progress = true;
        }
        if (progress) {
          lastProgress = System.nanoTime();
        } else if (System.nanoTime() - lastProgress > STALLED.toNanos()) {
          throw new ScanFailedException("cannot read Kafka topic " + name + " at " + bootstrap + ": the scan made no"
              + " progress for " + STALLED.toSeconds() + " s with " + remaining.size() + " partition(s) unread", null);
        }
      }
      return ids;
    }
  }

  private Map<String, Object> settings() {
    Map<String, Object> s = new HashMap<>(properties);
    s.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    s.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    s.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    s.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    s.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false"); // a scan must not create the topic it looks for
    s.putIfAbsent(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    s.putIfAbsent(ConsumerConfig.CLIENT_ID_CONFIG, "mic-outbox-reconcile");
    s.putIfAbsent(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Long.toString(DEFAULT_API_TIMEOUT.toMillis()));
    return s;
  }

  @Override
  public String toString() {
    return kafkaTopic != null ? "Kafka topic " + kafkaTopic : "Kafka";
  }
}
