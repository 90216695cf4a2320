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
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicReference;
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
 * the publisher uses (acks=all, idempotence, 5 in flight, linger 5 ms) and at most {@code window} records
 * unacknowledged, like the raw clients of the other brokers. A producer that never waits (send all, flush
 * once) is reported too, as the ceiling of the client itself.
 */
final class KafkaSide implements EndToEndBenchmark.Broker {
  private static final int PARTITIONS = 4;
  private static final List<String> TOPICS = List.of("order.raw", "order.throughput", "order.ordered");

  private final String bootstrap;
  private final Admin admin;
  private final String prefix = "mic-bench-e2e-" + UUID.randomUUID().toString().substring(0, 8) + ".";
  private final Map<String, String> settings = new LinkedHashMap<>();
  private final KafkaProducer<byte[], byte[]> rawProducer;
  private final int window;
  private boolean unbounded;
  private long seen;

  KafkaSide(String bootstrap, int window) throws Exception {
    this.bootstrap = bootstrap;
    this.window = window;
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
    return "raw KafkaProducer, same records and settings, same window (baseline)";
  }

  @Override
  public List<String> extraRaw() {
    return List.of("raw KafkaProducer, no window: send all, flush once (client ceiling)");
  }

  @Override
  public void publishRaw(List<OutboxEvent> events, String scenario) throws Exception {
    boolean bounded = scenario.equals(raw());
    Semaphore permits = new Semaphore(window);
    AtomicReference<Exception> failed = new AtomicReference<>();
    List<Future<RecordMetadata>> sent = new ArrayList<>(events.size());
    for (OutboxEvent e : events) {
      RecordHeaders headers = new RecordHeaders();
      OutboxHeaders.of(e).forEach((k, v) -> headers.add(k, utf8(v)));
      ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(prefix + e.topic(), null, utf8(e.aggregateId()),
          utf8(e.payload()), headers);
      if (bounded) {
        if (!permits.tryAcquire(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("no acknowledgement within 30 s");
        }
        sent.add(rawProducer.send(record, (metadata, error) -> {
          if (error != null) {
            failed.set(error);
          }
          permits.release();
        }));
      } else {
        sent.add(rawProducer.send(record));
      }
    }
    rawProducer.flush();
    for (Future<RecordMetadata> f : sent) {
      f.get(30, TimeUnit.SECONDS);
    }
    if (failed.get() != null) {
      throw failed.get();
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
