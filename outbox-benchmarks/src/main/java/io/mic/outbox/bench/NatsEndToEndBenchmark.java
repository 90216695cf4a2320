package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * End to end, table to JetStream with marks: {@link AsyncOutboxDispatcher} on PostgreSQL publishing through
 * {@link NatsJetStreamPublisher}, against the raw NATS client publishing the same messages (subject,
 * headers, {@code Nats-Msg-Id}) with the same window of outstanding PubAcks, in the same run.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.NatsEndToEndBenchmark
 *      [--url jdbc:postgresql://127.0.0.1:5432/test] [--nats nats://127.0.0.1:4222]
 *      [--events 20000] [--batch 500] [--window 256] [--rounds 3] [--out bench-results/nats-end-to-end.md]
 * </pre>
 */
public final class NatsEndToEndBenchmark {
  private static final String RAW = "raw NATS client, async, same messages and window (baseline)";

  private final Map<String, String> options;
  private final int events;
  private final int batch;
  private final int window;
  private final HikariDataSource dataSource;
  private final Connection nats;
  private final String stream = "BENCH_E2E_" + UUID.randomUUID().toString().substring(0, 8).toUpperCase();
  private final String subjectPrefix = stream.toLowerCase();
  private final Map<String, List<Double>> rates = new LinkedHashMap<>();

  private NatsEndToEndBenchmark(Map<String, String> options) throws Exception {
    this.options = options;
    this.events = Integer.parseInt(options.getOrDefault("events", "20000"));
    this.batch = Integer.parseInt(options.getOrDefault("batch", "500"));
    this.window = Integer.parseInt(options.getOrDefault("window", "256"));
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(options.getOrDefault("url", "jdbc:postgresql://127.0.0.1:5432/test"));
    config.setUsername(options.getOrDefault("user", "postgres"));
    config.setPassword(options.getOrDefault("password", ""));
    config.setMaximumPoolSize(8);
    this.dataSource = new HikariDataSource(config);
    this.nats = Nats.connect(new Options.Builder().server(options.getOrDefault("nats", "nats://127.0.0.1:4222"))
        .connectionName("mic-outbox-bench").build());
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> options = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    NatsEndToEndBenchmark bench = new NatsEndToEndBenchmark(options);
    JetStreamManagement jsm = bench.nats.jetStreamManagement();
    jsm.addStream(StreamConfiguration.builder().name(bench.stream).subjects(bench.subjectPrefix + ".>").build());
    try {
      bench.run(Integer.parseInt(options.getOrDefault("rounds", "3")));
    } finally {
      jsm.deleteStream(bench.stream);
      bench.nats.close();
      bench.dataSource.close();
    }
  }

  private void run(int rounds) throws Exception {
    for (int round = 1; round <= rounds; round++) {
      System.err.printf("round %d/%d%n", round, rounds);
      record(RAW, raw());
      for (boolean ordered : new boolean[] {false, true}) {
        for (int workers : new int[] {1, 2}) {
          for (boolean pipelined : new boolean[] {false, true}) {
            record(scenario(ordered, workers, pipelined), dispatcher(ordered, workers, pipelined));
          }
        }
      }
    }
    String report = report();
    System.out.println(report);
    Path out = Path.of(options.getOrDefault("out", "bench-results/nats-end-to-end.md"));
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    Files.writeString(out, report);
    System.err.println("written to " + out.toAbsolutePath());
  }

  private static String scenario(boolean ordered, int workers, boolean pipelined) {
    return "AsyncOutboxDispatcher, claim, " + (ordered ? "ordered" : "throughput") + " mode, " + workers
        + (workers == 1 ? " worker" : " workers") + (pipelined ? ", pipelined" : ", one step at a time");
  }

  /** The events a backlog holds: distinct aggregates, small payloads, as the library would send them. */
  private List<OutboxEvent> events(String topic) {
    List<OutboxEvent> list = new ArrayList<>(events);
    for (int i = 0; i < events; i++) {
      list.add(OutboxEvent.builder().aggregate("order", "o-" + i).topic(topic)
          .payload("{\"order\":" + i + ",\"status\":\"created\",\"total\":12.5}").build());
    }
    return list;
  }

  private double raw() throws Exception {
    String subject = subjectPrefix + ".raw";
    JetStream js = nats.jetStream();
    ArrayDeque<CompletableFuture<PublishAck>> inFlight = new ArrayDeque<>();
    List<OutboxEvent> list = events("order.created");
    long t0 = System.nanoTime();
    for (OutboxEvent e : list) {
      if (inFlight.size() >= window) {
        inFlight.poll().get(10, TimeUnit.SECONDS);
      }
      Headers headers = new Headers();
      OutboxHeaders.of(e).forEach(headers::put);
      headers.put("Nats-Msg-Id", e.id().toString());
      inFlight.add(js.publishAsync(subject, headers, e.payload().getBytes(StandardCharsets.UTF_8)));
    }
    for (CompletableFuture<PublishAck> ack : inFlight) {
      ack.get(10, TimeUnit.SECONDS);
    }
    return events / ((System.nanoTime() - t0) / 1e9);
  }

  private double dispatcher(boolean ordered, int workers, boolean pipelined) throws Exception {
    String table = "bench_e2e_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
    try {
      List<OutboxEvent> list = events("order." + (ordered ? "ordered" : "throughput"));
      try (java.sql.Connection c = dataSource.getConnection()) {
        c.setAutoCommit(false);
        for (int i = 0; i < list.size(); i += 1_000) { // one transaction per 1,000: each takes 1,000 aggregate locks
          store.append(c, list.subList(i, Math.min(list.size(), i + 1_000)));
          c.commit();
        }
      }
      try (java.sql.Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("VACUUM ANALYZE " + table);
      }
      CountDownLatch drained = new CountDownLatch(events);
      try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats)
          .subjectPrefix(subjectPrefix).maxPendingAcks(window).build();
          AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).dispatchFn(publisher)
              .useClaim(true).preserveAggregateOrder(ordered).workers(workers).batchSize(batch).pipelined(pipelined)
              .pollInterval(Duration.ofMillis(50)).listener(new OutboxListener() {
                @Override public void onDispatched(OutboxEvent event, Duration publishTime) {
                  drained.countDown();
                }
              }).build()) {
        long t0 = System.nanoTime();
        d.start();
        if (!drained.await(5, TimeUnit.MINUTES)) {
          throw new IllegalStateException(drained.getCount() + " events left after 5 minutes");
        }
        return events / ((System.nanoTime() - t0) / 1e9);
      }
    } finally {
      try (java.sql.Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table + " CASCADE");
        s.execute("DROP TABLE IF EXISTS " + table + "_sequences");
      }
    }
  }

  private void record(String scenario, double rate) {
    rates.computeIfAbsent(scenario, k -> new ArrayList<>()).add(rate);
    System.err.printf("  %-75s %,10.0f events/s%n", scenario, rate);
  }

  private double median(String scenario) {
    List<Double> v = new ArrayList<>(rates.get(scenario));
    v.sort(Double::compare);
    return v.get(v.size() / 2);
  }

  private String report() {
    StringBuilder md = new StringBuilder("# End to end: PostgreSQL to NATS JetStream\n\n");
    md.append("Run ").append(Instant.now()).append(" on ").append(Runtime.getRuntime().availableProcessors())
        .append(" cores, Java ").append(System.getProperty("java.version")).append(", NATS ")
        .append(nats.getServerInfo().getVersion()).append(". ").append(events)
        .append(" events over as many aggregates, batch ").append(batch).append(", PubAck window ").append(window)
        .append(", file-backed stream; time from start until the last mark.\n\n");
    md.append("| scenario | median events/s | all rounds | ratio to raw |\n|---|---:|---|---:|\n");
    rates.forEach((k, v) -> md.append("| ").append(k).append(" | ").append(String.format("%,.0f", median(k)))
        .append(" | ").append(v.stream().map(x -> String.format("%,.0f", x)).toList()).append(" | ")
        .append(String.format("%.2f", median(k) / median(RAW))).append(" |\n"));
    return md.toString();
  }
}
