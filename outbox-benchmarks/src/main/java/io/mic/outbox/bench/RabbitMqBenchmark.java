package io.mic.outbox.bench;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * RabbitMQ publication rate of OutboxDispatcher + RabbitMqPublisher (events from an InMemoryOutboxStore,
 * batches of 500) against the raw amqp-client publishing the same messages (same properties and headers,
 * persistent, mandatory, confirms) with the same window of outstanding confirms, in the same run, into the
 * same durable queue. Writes a Markdown report.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.RabbitMqBenchmark \
 *      [--uri amqp://guest:guest@127.0.0.1:5672] [--events 20000] [--window 256] [--rounds 3] \
 *      [--out bench-results/rabbitmq.md]
 * </pre>
 */
public final class RabbitMqBenchmark {
  private static final String RAW = "raw amqp-client, confirms, window (baseline)";
  private static final String DISPATCHER = "OutboxDispatcher + RabbitMqPublisher, batch 500";

  private final String uri;
  private final int events;
  private final int window;
  private final String exchange = "mic-bench-" + UUID.randomUUID().toString().substring(0, 8);
  private final String queue = exchange + "-q";
  private final Map<String, List<Double>> rates = new LinkedHashMap<>();

  private RabbitMqBenchmark(Map<String, String> o) {
    uri = o.getOrDefault("uri", "amqp://guest:guest@127.0.0.1:5672");
    events = Integer.parseInt(o.getOrDefault("events", "20000"));
    window = Integer.parseInt(o.getOrDefault("window", "256"));
  }

  public static void main(String[] args) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    RabbitMqBenchmark bench = new RabbitMqBenchmark(o);
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(bench.uri);
    try (Connection admin = factory.newConnection("mic-bench-admin"); Channel ch = admin.createChannel()) {
      ch.exchangeDeclare(bench.exchange, "topic", true);
      ch.queueDeclare(bench.queue, true, false, false, null);
      ch.queueBind(bench.queue, bench.exchange, "#");
      try {
        int rounds = Integer.parseInt(o.getOrDefault("rounds", "3"));
        bench.raw(factory, ch); // warm-up of both paths, not recorded
        bench.dispatcher(ch);
        for (int r = 1; r <= rounds; r++) {
          System.err.printf("round %d/%d%n", r, rounds);
          bench.record(RAW, bench.raw(factory, ch));
          bench.record(DISPATCHER, bench.dispatcher(ch));
        }
        String report = bench.report(admin.getServerProperties().get("version"));
        System.out.println(report);
        Path out = Path.of(o.getOrDefault("out", "bench-results/rabbitmq.md"));
        if (out.getParent() != null) {
          Files.createDirectories(out.getParent());
        }
        Files.writeString(out, report);
      } finally {
        ch.queueDelete(bench.queue);
        ch.exchangeDelete(bench.exchange);
      }
    }
  }

  private List<OutboxEvent> newEvents() {
    List<OutboxEvent> list = new ArrayList<>(events);
    for (int i = 0; i < events; i++) {
      list.add(OutboxEvent.builder().aggregate("order", "agg-" + (i % 1000)).topic("order.changed")
          .payload("{\"order\":" + (i % 1000) + ",\"n\":" + i + ",\"note\":\"benchmark\"}")
          .header("tenant", "acme").build());
    }
    return list;
  }

  private double raw(ConnectionFactory factory, Channel admin) throws Exception {
    List<OutboxEvent> list = newEvents();
    try (Connection c = factory.newConnection("mic-bench-raw"); Channel ch = c.createChannel()) {
      long t0 = System.nanoTime();
      RabbitMqSide.publishConfirmed(ch, exchange, list, window);
      double rate = list.size() / ((System.nanoTime() - t0) / 1e9);
      check(admin);
      return rate;
    }
  }

  private double dispatcher(Channel admin) throws Exception {
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    store.append(newEvents());
    try (RabbitMqPublisher publisher = RabbitMqPublisher.builder().uri(uri).exchange(exchange)
        .confirmWindow(window).build()) {
      OutboxDispatcher d = OutboxDispatcher.builder().store(store).dispatchFn(publisher).batchSize(500).build();
      long t0 = System.nanoTime();
      int done = 0;
      int n;
      while ((n = d.dispatchOnce().dispatched()) > 0) {
        done += n;
      }
      double rate = done / ((System.nanoTime() - t0) / 1e9);
      if (done != events) {
        throw new IllegalStateException("dispatched " + done + " of " + events);
      }
      check(admin);
      return rate;
    }
  }

  /** Every message reached the queue; purged for the next run. */
  private void check(Channel admin) throws Exception {
    long queued = admin.queuePurge(queue).getMessageCount();
    if (queued != events) {
      throw new IllegalStateException("the queue held " + queued + " messages, expected " + events);
    }
  }

  private void record(String scenario, double rate) {
    rates.computeIfAbsent(scenario, k -> new ArrayList<>()).add(rate);
    System.err.printf("  %-50s %,10.0f msg/s%n", scenario, rate);
  }

  private double median(String scenario) {
    return BenchSupport.median(rates.get(scenario));
  }

  private String report(Object version) {
    StringBuilder md = new StringBuilder("# RabbitMQ benchmark\n\nRun ").append(Instant.now()).append(" on ")
        .append(Runtime.getRuntime().availableProcessors()).append(" cores, Java ")
        .append(System.getProperty("java.version")).append(", RabbitMQ ").append(version).append(".\n")
        .append(events).append(" persistent, mandatory messages per run into one durable queue, confirm window ")
        .append(window).append(", one publishing thread.\n\n")
        .append("| scenario | median msg/s | all rounds |\n|---|---:|---|\n");
    rates.forEach((k, v) -> md.append("| ").append(k).append(" | ").append(String.format("%,.0f", median(k)))
        .append(" | ").append(v.stream().map(x -> String.format("%,.0f", x)).toList()).append(" |\n"));
    md.append(String.format("%n| ratio | value |%n|---|---:|%n| dispatcher / raw client (target >= 0.70) | %.2f |%n",
        median(DISPATCHER) / median(RAW)));
    return md.toString();
  }
}
