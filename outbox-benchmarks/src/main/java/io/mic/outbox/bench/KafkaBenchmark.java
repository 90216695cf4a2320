package io.mic.outbox.bench;

import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.kafka.KafkaPublisher;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka publishing rate of the dispatcher with {@link KafkaPublisher} against a raw {@code KafkaProducer}
 * sending the same records (topic, key, headers, value) with the same settings, in the same run; writes a
 * Markdown report. Both send batches of 500 and flush after each, as the dispatcher does.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.KafkaBenchmark \
 *      --bootstrap 127.0.0.1:9092 [--events 50000] [--rounds 3] [--out bench-results/kafka.md]
 * </pre>
 */
public final class KafkaBenchmark {
  private static final int BATCH = 500;
  private static final String RAW = "raw KafkaProducer, batches of 500 + flush (baseline)";
  private static final String DISPATCHER = "OutboxDispatcher (in-memory store) + KafkaPublisher, batch 500";

  private final String bootstrap;
  private final int events;
  private final int aggregates;
  private final String topic = "mic-bench-" + UUID.randomUUID().toString().substring(0, 8);
  private final Map<String, String> settings = new LinkedHashMap<>();
  private final Map<String, List<Double>> rates = new LinkedHashMap<>();

  private KafkaBenchmark(Map<String, String> o) {
    bootstrap = o.get("bootstrap");
    if (bootstrap == null) {
      throw new IllegalArgumentException("--bootstrap HOST:PORT is required, e.g. --bootstrap 127.0.0.1:9092");
    }
    events = Integer.parseInt(o.getOrDefault("events", "50000"));
    aggregates = Math.max(1, events / 50);
    // the same settings for both sides: what KafkaPublisher forces or defaults, spelled out
    settings.put("bootstrap.servers", bootstrap);
    settings.put("acks", "all");
    settings.put("enable.idempotence", "true");
    settings.put("max.in.flight.requests.per.connection", "5");
    settings.put("linger.ms", "5");
    settings.put("delivery.timeout.ms", "20000");
    settings.put("request.timeout.ms", "10000");
    settings.put("max.block.ms", "5000");
  }

  public static void main(String[] args) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    KafkaBenchmark bench = new KafkaBenchmark(o);
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bench.bootstrap))) {
      admin.createTopics(List.of(new NewTopic(bench.topic, 4, (short) 1))).all().get(30, TimeUnit.SECONDS);
      try {
        bench.record(RAW, bench.raw()); // warm-up round, not recorded twice
        bench.rates.clear();
        int rounds = Integer.parseInt(o.getOrDefault("rounds", "3"));
        for (int r = 1; r <= rounds; r++) {
          System.err.printf("round %d/%d%n", r, rounds);
          bench.record(RAW, bench.raw());
          bench.record(DISPATCHER, bench.dispatcher());
        }
      } finally {
        admin.deleteTopics(Set.of(bench.topic)).all().get(30, TimeUnit.SECONDS);
      }
    }
    String report = bench.report();
    System.out.println(report);
    Path out = Path.of(o.getOrDefault("out", "bench-results/kafka.md"));
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    Files.writeString(out, report);
  }

  private List<OutboxEvent> events() {
    List<OutboxEvent> list = new ArrayList<>(events);
    for (int i = 0; i < events; i++) {
      list.add(OutboxEvent.builder().aggregate("order", "o-" + (i % aggregates)).topic(topic)
          .payload("{\"orderId\":" + i + ",\"status\":\"created\",\"amount\":1234.50,\"currency\":\"EUR\"}")
          .header("tenant", "acme").build());
    }
    return list;
  }

  private double raw() throws Exception {
    List<OutboxEvent> list = events();
    Map<String, Object> config = new LinkedHashMap<>(settings);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
        new ByteArraySerializer())) {
      long t0 = System.nanoTime();
      int done = 0;
      List<Future<RecordMetadata>> sent = new ArrayList<>(BATCH);
      for (int from = 0; from < list.size(); from += BATCH) {
        sent.clear();
        for (OutboxEvent e : list.subList(from, Math.min(from + BATCH, list.size()))) {
          RecordHeaders headers = new RecordHeaders();
          e.headers().forEach((k, v) -> headers.add(k, utf8(v)));
          headers.add("x-event-id", utf8(e.id().toString()));
          headers.add("x-aggregate-type", utf8(e.aggregateType()));
          headers.add("x-aggregate-id", utf8(e.aggregateId()));
          sent.add(producer.send(new ProducerRecord<>(e.topic(), null, utf8(e.aggregateId()), utf8(e.payload()),
              headers)));
        }
        producer.flush();
        for (Future<RecordMetadata> f : sent) {
          f.get();
          done++;
        }
      }
      return rate(done, t0);
    }
  }

  private double dispatcher() throws Exception {
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    for (OutboxEvent e : events()) {
      store.append(e);
    }
    KafkaPublisher.Builder builder = KafkaPublisher.builder();
    settings.forEach(builder::property);
    try (KafkaPublisher publisher = builder.build()) {
      OutboxDispatcher d = OutboxDispatcher.builder().store(store).dispatchFn(publisher).batchSize(BATCH).build();
      long t0 = System.nanoTime();
      int done = 0;
      int n;
      while ((n = d.dispatchOnce().dispatched()) > 0) {
        done += n;
      }
      return rate(done, t0);
    }
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private double rate(int done, long t0) {
    if (done != events) {
      throw new IllegalStateException("published " + done + " of " + events);
    }
    return done / ((System.nanoTime() - t0) / 1e9);
  }

  private void record(String scenario, double rate) {
    rates.computeIfAbsent(scenario, k -> new ArrayList<>()).add(rate);
    System.err.printf("  %-66s %,10.0f events/s%n", scenario, rate);
  }

  private double median(String scenario) {
    return BenchSupport.median(rates.get(scenario));
  }

  private String report() {
    StringBuilder md = new StringBuilder("# Kafka benchmark\n\nRun ").append(Instant.now()).append(" on ")
        .append(Runtime.getRuntime().availableProcessors()).append(" cores, Java ")
        .append(System.getProperty("java.version")).append(", broker ").append(bootstrap).append(".\n")
        .append(events).append(" events over ").append(aggregates).append(" aggregates, 4 partitions, settings ")
        .append(settings.keySet().stream().filter(k -> !k.equals("bootstrap.servers"))
            .map(k -> k + "=" + settings.get(k)).toList())
        .append(".\n\n| scenario | median events/s | all rounds |\n|---|---:|---|\n");
    rates.forEach((k, v) -> md.append("| ").append(k).append(" | ").append(String.format("%,.0f", median(k)))
        .append(" | ").append(v.stream().map(x -> String.format("%,.0f", x)).toList()).append(" |\n"));
    md.append(String.format("%n| ratio | value |%n|---|---:|%n| dispatcher / raw producer (target >= 0.70) | %.2f |%n",
        median(DISPATCHER) / median(RAW)));
    return md.toString();
  }
}
