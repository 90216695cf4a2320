package io.mic.outbox.bench;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.kafka.KafkaPublisher;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka: one topic of 4 partitions per event topic; the raw producer sends every record with the settings
 * the publisher uses (acks=all, idempotence, 5 in flight, linger 5 ms) and flushes once at the end: the best
 * a hand-written producer loop does.
 */
final class KafkaSide implements EndToEndBenchmark.Broker {
  private static final int PARTITIONS = 4;
  private static final List<String> TOPICS = List.of("order.raw", "order.throughput", "order.ordered");

  private final String bootstrap;
  private final Admin admin;
  private final String prefix = "mic-bench-e2e-" + UUID.randomUUID().toString().substring(0, 8) + ".";
  private final Map<String, String> settings = new LinkedHashMap<>();
  private final KafkaProducer<byte[], byte[]> rawProducer;
  private long seen;

  KafkaSide(String bootstrap) throws Exception {
    this.bootstrap = bootstrap;
    settings.put("bootstrap.servers", bootstrap);
    settings.put("acks", "all");
    settings.put("enable.idempotence", "true");
    settings.put("max.in.flight.requests.per.connection", "5");
    settings.put("linger.ms", "5");
    rawProducer = new KafkaProducer<>(new LinkedHashMap<>(settings), new ByteArraySerializer(),
        new ByteArraySerializer()); // made before the clock starts, like the publisher
    admin = Admin.create(Map.of("bootstrap.servers", bootstrap));
    admin.createTopics(TOPICS.stream().map(t -> new NewTopic(prefix + t, PARTITIONS, (short) 1)).toList())
        .all().get(30, TimeUnit.SECONDS);
  }

  @Override
  public String describe() {
    return "Kafka at " + bootstrap + " (" + PARTITIONS + " partitions, " + settings.entrySet().stream()
        .filter(e -> !e.getKey().equals("bootstrap.servers")).map(e -> e.getKey() + "=" + e.getValue())
        .collect(Collectors.joining(", ")) + ")";
  }

  @Override
  public String raw() {
    return "raw KafkaProducer, same records and settings, one flush (baseline)";
  }

  @Override
  public void publishRaw(List<OutboxEvent> events) throws Exception {
    List<Future<RecordMetadata>> sent = new ArrayList<>(events.size());
    for (OutboxEvent e : events) {
      RecordHeaders headers = new RecordHeaders();
      OutboxHeaders.of(e).forEach((k, v) -> headers.add(k, utf8(v)));
      sent.add(rawProducer.send(new ProducerRecord<>(prefix + e.topic(), null, utf8(e.aggregateId()),
          utf8(e.payload()), headers)));
    }
    rawProducer.flush();
    for (Future<RecordMetadata> f : sent) {
      f.get(30, TimeUnit.SECONDS);
    }
  }

  @Override
  public EndToEndBenchmark.Publisher publisher() {
    KafkaPublisher.Builder b = KafkaPublisher.builder().topicOf(e -> prefix + e.topic());
    settings.forEach(b::property);
    KafkaPublisher p = b.build();
    return new EndToEndBenchmark.Publisher(p, p);
  }

  @Override
  public void checkAndReset(int expected) throws Exception {
    Map<TopicPartition, OffsetSpec> latest = new LinkedHashMap<>();
    for (String t : TOPICS) {
      for (int p = 0; p < PARTITIONS; p++) {
        latest.put(new TopicPartition(prefix + t, p), OffsetSpec.latest());
      }
    }
    long total = admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).values().stream()
        .mapToLong(r -> r.offset()).sum();
    long added = total - seen;
    seen = total;
    if (added != expected) {
      throw new IllegalStateException("the topics gained " + added + " records, expected " + expected);
    }
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void close() throws Exception {
    rawProducer.close();
    try {
      admin.deleteTopics(TOPICS.stream().map(t -> prefix + t).collect(Collectors.toSet())).all()
          .get(30, TimeUnit.SECONDS);
    } finally {
      admin.close();
    }
  }
}
