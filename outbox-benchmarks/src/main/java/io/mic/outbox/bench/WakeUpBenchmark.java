package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Commit-to-publish latency when the producer is another process, with and without
 * {@code notifyOnAppend}, and what the notification costs a single-event append.
 *
 * <p><b>Latency.</b> A child JVM ({@link Producer}) commits single-event transactions at a fixed rate
 * (default 400/s, spread over 4 threads with a connection each) and prints each event's id with the wall
 * clock just after its commit returned; this JVM runs an {@link AsyncOutboxDispatcher} (claim mode, one
 * worker, default batch, {@code pollInterval} 1 s) whose publisher notes the wall clock when it is handed
 * each event. Latency = publish time - commit time, on the same machine clock. The first 2 s of events
 * are a warm-up and not counted.
 *
 * <p><b>Cost.</b> Single-event appends ({@code append(c, event)} + commit, one thread) into one table with
 * {@code notifyOnAppend} off and on, interleaved rounds, a dispatcher's subscription listening meanwhile.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.WakeUpBenchmark \
 *      [--url U] [--user U] [--password P] [--rate 400] [--seconds 20] [--rounds 1]
 *      [--cost-events 2000] [--cost-rounds 7] [--out bench-results/wake-up.md]
 * </pre>
 */
public final class WakeUpBenchmark {
  private static final Duration POLL = Duration.ofSeconds(1);
  private static final Duration WARM_UP = Duration.ofSeconds(2);

  private final Map<String, String> options;
  private final HikariDataSource dataSource;
  private final List<String> rows = new ArrayList<>();
  private final Map<String, List<double[]>> latencies = new LinkedHashMap<>();
  private final Map<Boolean, List<Double>> costRates = new LinkedHashMap<>();
  private final List<String> loads = new ArrayList<>();

  private WakeUpBenchmark(Map<String, String> options) {
    this.options = options;
    this.dataSource = BenchSupport.postgresPool(options, 4);
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> options = BenchSupport.parse(args);
    WakeUpBenchmark bench = new WakeUpBenchmark(options);
    try (bench.dataSource) {
      bench.run();
    }
  }

  private void run() throws Exception {
    int rounds = Integer.parseInt(options.getOrDefault("rounds", "1"));
    loads.add(BenchSupport.loadAverage());
    for (int round = 1; round <= rounds; round++) {
      System.err.printf("round %d/%d%n", round, rounds);
      latency(false);
      latency(true);
      loads.add(BenchSupport.loadAverage());
    }
    cost();
    loads.add(BenchSupport.loadAverage());
    String report = report();
    System.out.println(report);
    BenchSupport.write(Path.of(options.getOrDefault("out", "bench-results/wake-up.md")), report);
  }

  // ------------------------------------------------------------------ latency

  private void latency(boolean notify) throws Exception {
    int rate = Integer.parseInt(options.getOrDefault("rate", "400"));
    int seconds = Integer.parseInt(options.getOrDefault("seconds", "20"));
    String table = "bench_wake_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).notifyOnAppend(notify)
        .build();
    store.createSchema();
    Map<UUID, Long> published = new ConcurrentHashMap<>();
    AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().name("bench").store(store).useClaim(true)
        .pollInterval(POLL).dispatchFn(e -> published.putIfAbsent(e.id(), nowMicros())).build();
    Map<UUID, Long> committed = new LinkedHashMap<>();
    long started;
    try (dispatcher) {
      dispatcher.start();
      List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
          .toString(), "-Xmx256m", "-cp", System.getProperty("java.class.path"), Producer.class.getName(),
          "--url", BenchSupport.postgresUrl(options), "--user", options.getOrDefault("user", "postgres"), "--password",
          options.getOrDefault("password", ""), "--table", table, "--rate", String.valueOf(rate),
          "--seconds", String.valueOf(seconds), "--notify", String.valueOf(notify)));
      Process child = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
      started = nowMicros();
      try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(),
          StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          if (line.startsWith("C ")) {
            String[] p = line.split(" ");
            committed.put(UUID.fromString(p[1]), Long.parseLong(p[2]));
          }
        }
      }
      if (!child.waitFor(60, TimeUnit.SECONDS) || child.exitValue() != 0) {
        throw new IllegalStateException("the producer process failed (exit " + child.exitValue() + ")");
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (!published.keySet().containsAll(committed.keySet()) && System.nanoTime() < deadline) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
      }
    } finally {
      BenchSupport.dropOutbox(dataSource, table);
    }
    long firstCommit = committed.values().stream().mapToLong(Long::longValue).min().orElse(started);
    List<Double> ms = new ArrayList<>();
    int missing = 0;
    for (Map.Entry<UUID, Long> c : committed.entrySet()) {
      if (c.getValue() - firstCommit < WARM_UP.toNanos() / 1_000) {
        continue;
      }
      Long p = published.get(c.getKey());
      if (p == null) {
        missing++;
      } else {
        ms.add((p - c.getValue()) / 1_000.0);
      }
    }
    ms.sort(null);
    long lastCommit = committed.values().stream().mapToLong(Long::longValue).max().orElse(firstCommit);
    double achieved = (committed.size() - 1) / Math.max(1e-6, (lastCommit - firstCommit) / 1e6);
    double[] figures = {BenchSupport.percentile(ms, 0.50), BenchSupport.percentile(ms, 0.99), ms.get(ms.size() - 1),
        ms.size(), achieved};
    String key = notify ? "notifyOnAppend(true): woken up at commit" : "notifyOnAppend(false): polling only (baseline)";
    latencies.computeIfAbsent(key, k -> new ArrayList<>()).add(figures);
    System.err.printf("  %-50s p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms  (%d events, %.0f commits/s, %d missing)%n",
        key, figures[0], figures[1], figures[2], ms.size(), achieved, missing);
    if (missing > 0) {
      throw new IllegalStateException(missing + " committed events were not published within 30 s");
    }
  }

  // ------------------------------------------------------------------ cost

  private void cost() throws SQLException {
    int events = Integer.parseInt(options.getOrDefault("cost-events", "2000"));
    int rounds = Integer.parseInt(options.getOrDefault("cost-rounds", "7"));
    String table = "bench_wake_cost_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore off = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    JdbcOutboxStore on = JdbcOutboxStore.builder().dataSource(dataSource).table(table).notifyOnAppend(true).build();
    off.createSchema();
    try (OutboxStore.Subscription listening = on.subscribeToAppends(() -> { }).orElseThrow()) {
      appendSingles(off, 500); // warm-up of both paths
      appendSingles(on, 500);
      for (int round = 1; round <= rounds; round++) {
        boolean notifyFirst = round % 2 == 0; // alternate which goes first
        for (boolean notify : new boolean[] {notifyFirst, !notifyFirst}) {
          double rate = appendSingles(notify ? on : off, events);
          costRates.computeIfAbsent(notify, k -> new ArrayList<>()).add(rate);
          System.err.printf("  single-event append, notifyOnAppend(%s): %,.0f events/s%n", notify, rate);
        }
      }
    } finally {
      BenchSupport.dropOutbox(dataSource, table);
    }
  }

  private double appendSingles(JdbcOutboxStore store, int events) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      long t0 = System.nanoTime();
      for (int i = 0; i < events; i++) {
        store.append(c, event(i % 1_000));
        c.commit();
      }
      return events / ((System.nanoTime() - t0) / 1e9);
    }
  }

  // ------------------------------------------------------------------ report

  private String report() throws SQLException {
    StringBuilder md = new StringBuilder("# Wake-up across processes (notifyOnAppend)\n\n");
    md.append("Run ").append(Instant.now().truncatedTo(ChronoUnit.SECONDS)).append(" on ")
        .append(Runtime.getRuntime().availableProcessors()).append(" cores, Java ")
        .append(System.getProperty("java.version")).append(", ").append(BenchSupport.postgresSettings(dataSource))
        .append(".\nLoad average (1, 5, 15 min) at the start, after each round and at the end: ")
        .append(String.join(" / ", loads)).append(".\n\n");
    md.append("## Commit-to-publish latency, producer in another JVM\n\n")
        .append(options.getOrDefault("rate", "400")).append(" single-event commits/s for ")
        .append(options.getOrDefault("seconds", "20")).append(" s from a child JVM (4 threads); one")
        .append(" AsyncOutboxDispatcher, claim mode, 1 worker, batch 100, pollInterval ").append(POLL.toMillis())
        .append(" ms, no-op publisher; first ").append(WARM_UP.toSeconds()).append(" s not counted.\n\n")
        .append("| scenario | p50 ms | p99 ms | max ms | events | commits/s |\n|---|---:|---:|---:|---:|---:|\n");
    latencies.forEach((k, list) -> {
      for (double[] f : list) {
        md.append(String.format("| %s | %.1f | %.1f | %.1f | %,.0f | %.0f |%n", k, f[0], f[1], f[2], f[3], f[4]));
      }
    });
    md.append("\nGoal: p99 <= 50 ms with the wake-up.\n\n");
    md.append("## Cost of notifyOnAppend on single-event appends\n\n")
        .append("`append(c, event)` + commit, one thread, ").append(options.getOrDefault("cost-events", "2000"))
        .append(" events per round over 1,000 aggregates, interleaved rounds, a listener on the channel.\n\n")
        .append("| scenario | median events/s | all rounds |\n|---|---:|---|\n");
    costRates.forEach((notify, r) -> md.append(String.format("| notifyOnAppend(%s)%s | %,.0f | %s |%n", notify,
        notify ? "" : " (baseline)", BenchSupport.median(r), r.stream().map(x -> String.format("%,.0f", x)).toList())));
    if (costRates.size() == 2) {
      double ratio = BenchSupport.median(costRates.get(true)) / BenchSupport.median(costRates.get(false));
      md.append(String.format("%nRatio with / without: **%.2f** (cost %.0f %%; goal: cost <= 10 %%).%n", ratio,
          (1 - ratio) * 100));
    }
    return md.toString();
  }

  static OutboxEvent event(int aggregate) {
    return OutboxEvent.builder().aggregate("order", "o-" + aggregate).topic("order.changed")
        .payload("{\"order\":" + aggregate + ",\"note\":\"benchmark\"}").header("tenant", "acme").build();
  }

  static long nowMicros() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000 + now.getNano() / 1_000;
  }

  /**
   * The producer process: {@code threads} threads (default 4), each with its own connection, commit one event
   * per transaction on a fixed schedule that adds up to {@code rate} per second, and print
   * {@code C <id> <epoch micros after the commit>} per event.
   */
  public static final class Producer {
    public static void main(String[] args) throws Exception {
      Map<String, String> options = BenchSupport.parse(args);
      int rate = Integer.parseInt(options.get("rate"));
      int seconds = Integer.parseInt(options.get("seconds"));
      int threads = Integer.parseInt(options.getOrDefault("threads", "4"));
      try (HikariDataSource ds = BenchSupport.postgresPool(options, threads)) {
        JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).table(options.get("table"))
            .notifyOnAppend(Boolean.parseBoolean(options.get("notify"))).build();
        long periodNanos = TimeUnit.SECONDS.toNanos(1) * threads / rate;
        int perThread = rate * seconds / threads;
        long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          int offset = t;
          Thread w = new Thread(() -> produce(ds, store, start + offset * periodNanos / threads, periodNanos,
              perThread, offset), "producer-" + t);
          workers.add(w);
          w.start();
        }
        for (Thread w : workers) {
          w.join();
        }
      }
      System.out.flush();
    }

    private static void produce(HikariDataSource ds, JdbcOutboxStore store, long start, long period, int count,
        int thread) {
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < count; i++) {
          long due = start + i * period;
          long wait = due - System.nanoTime();
          if (wait > 0) {
            LockSupport.parkNanos(wait);
          }
          OutboxEvent e = event(thread * 100_000 + i % 250);
          store.append(c, e);
          c.commit();
          long at = nowMicros();
          out.setLength(0);
          out.append("C ").append(e.id()).append(' ').append(at).append('\n');
          synchronized (System.out) {
            System.out.print(out);
          }
        }
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  static {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
  }
}
