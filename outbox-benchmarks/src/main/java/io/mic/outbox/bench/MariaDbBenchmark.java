package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * MariaDB drain rate of the dispatcher against the store's own claim and mark operations called in a loop,
 * in the same run, and writes a Markdown report.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.MariaDbBenchmark \
 *      [--url jdbc:mariadb://127.0.0.1:3306/test] [--events 50000] [--rounds 3] [--out bench-results/mariadb.md]
 * </pre>
 */
public final class MariaDbBenchmark {
  private static final int BATCH = 500;
  private static final String DRAIN_BASELINE = "drain: store.claim + store.markDispatched, no dispatcher (baseline)";
  private final HikariDataSource dataSource;
  private final int events;
  private final int aggregates;
  private final Map<String, List<Double>> rates = new LinkedHashMap<>();

  private MariaDbBenchmark(Map<String, String> o) {
    events = Integer.parseInt(o.getOrDefault("events", "50000"));
    aggregates = events / 20;
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(o.getOrDefault("url", "jdbc:mariadb://127.0.0.1:3306/test"));
    config.setUsername(o.getOrDefault("user", "root"));
    config.setPassword(o.getOrDefault("password", ""));
    config.setMaximumPoolSize(4);
    dataSource = new HikariDataSource(config);
  }

  public static void main(String[] args) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    MariaDbBenchmark bench = new MariaDbBenchmark(o);
    try (bench.dataSource) {
      int rounds = Integer.parseInt(o.getOrDefault("rounds", "3"));
      for (int r = 1; r <= rounds; r++) {
        System.err.printf("round %d/%d%n", r, rounds);
        bench.record(DRAIN_BASELINE, bench.drainStore());
        bench.record("drain: OutboxDispatcher, claim, throughput mode", bench.drainDispatcher(false));
        bench.record("drain: OutboxDispatcher, claim, ordered mode", bench.drainDispatcher(true));
      }
      String report = bench.report();
      System.out.println(report);
      Path out = Path.of(o.getOrDefault("out", "bench-results/mariadb.md"));
      if (out.getParent() != null) {
        Files.createDirectories(out.getParent());
      }
      Files.writeString(out, report);
    }
  }

  private String load() throws SQLException {
    String table = "bench_outbox_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore.builder().dataSource(dataSource).table(table).build().createSchema();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("INSERT INTO `" + table + "` (id, aggregate_type, aggregate_id, topic, payload, headers, priority,"
          + " created_at, next_attempt_at) SELECT UUID(), 'order', CONCAT('agg-', seq % " + aggregates + "),"
          + " 'order.changed', CONCAT('{\"order\":', seq % " + aggregates + ", ',\"n\":', seq, ',\"note\":\"benchmark\"}'),"
          + " '{}', 0, DATE_ADD(UTC_TIMESTAMP(6), INTERVAL CAST(seq AS SIGNED) - " + events + " MICROSECOND), UTC_TIMESTAMP(6)"
          + " FROM seq_1_to_" + events);
      s.execute("ANALYZE TABLE `" + table + "`");
    }
    return table;
  }

  /** The baseline: the store's own claim and batched mark in a loop, without a dispatcher. */
  private double drainStore() throws SQLException {
    String table = load();
    try {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
      long t0 = System.nanoTime();
      int done = 0;
      while (true) {
        List<OutboxEvent> claimed = store.claim("store#" + done, BATCH, Duration.ofMinutes(1), false);
        if (claimed.isEmpty()) {
          break;
        }
        done += store.markDispatched(claimed).size();
      }
      return rate(done, t0);
    } finally {
      drop(table);
    }
  }


  private double drainDispatcher(boolean ordered) throws SQLException {
    String table = load();
    try {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
      OutboxDispatcher d = OutboxDispatcher.builder().store(store).dispatchFn(e -> {}).useClaim(true)
          .preserveAggregateOrder(ordered).batchSize(BATCH).build();
      long t0 = System.nanoTime();
      int done = 0;
      int n;
      while ((n = d.dispatchOnce().dispatched()) > 0) {
        done += n;
      }
      return rate(done, t0);
    } finally {
      drop(table);
    }
  }

  private double rate(int done, long t0) {
    if (done != events) {
      throw new IllegalStateException("drained " + done + " of " + events);
    }
    return done / ((System.nanoTime() - t0) / 1e9);
  }

  private void drop(String table) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS `" + table + "`");
      s.execute("DROP TABLE IF EXISTS `" + table + "_locks`");
    }
  }

  private void record(String scenario, double rate) {
    rates.computeIfAbsent(scenario, k -> new ArrayList<>()).add(rate);
    System.err.printf("  %-55s %,10.0f events/s%n", scenario, rate);
  }

  private double median(String scenario) {
    return BenchSupport.median(rates.get(scenario));
  }

  private String report() throws SQLException {
    StringBuilder md = new StringBuilder("# MariaDB benchmark\n\nRun ").append(Instant.now()).append(" on ")
        .append(Runtime.getRuntime().availableProcessors()).append(" cores, Java ")
        .append(System.getProperty("java.version")).append(", ").append(version()).append(".\nBacklog: ")
        .append(events).append(" events over ").append(aggregates)
        .append(" aggregates, batch 500, no-op publisher, one dispatcher thread.\n\n")
        .append("| scenario | median events/s | all rounds |\n|---|---:|---|\n");
    rates.forEach((k, v) -> md.append("| ").append(k).append(" | ").append(String.format("%,.0f", median(k)))
        .append(" | ").append(v.stream().map(x -> String.format("%,.0f", x)).toList()).append(" |\n"));
    md.append("\n| ratio | value |\n|---|---:|\n")
        .append(String.format("| dispatcher / store operations (target >= 0.80) | %.2f |%n",
            median("drain: OutboxDispatcher, claim, throughput mode") / median(DRAIN_BASELINE)))
        .append(String.format("| ordered / throughput mode | %.2f |%n",
            median("drain: OutboxDispatcher, claim, ordered mode")
                / median("drain: OutboxDispatcher, claim, throughput mode")));
    return md.toString();
  }

  private String version() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT VERSION()")) {
      rs.next();
      return "MariaDB " + rs.getString(1);
    }
  }
}
