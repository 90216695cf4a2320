package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxMaintenance;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A table that stays small: a steady stream of appends (one event per transaction, {@code --rate} a second)
 * drained by an {@link AsyncOutboxDispatcher} (claim mode, 2 workers, a publisher that only counts), with
 * retention purging what was dispatched more than {@code --retention} ago every 10 s, for
 * {@code --minutes}. Every {@code --sample-seconds} it records the dead and live tuples of the table, its
 * heap and index size, the backlog, and the latency of a claim of 100 (released again). The report shows
 * the samples and whether the first and the last third stay within the same bounds, with the autovacuum
 * settings in force. Where autovacuum is off on the server, {@code --vacuum-seconds N} runs {@code VACUUM}
 * on the outbox table every N seconds instead, as an operator would schedule it; without either, dead
 * tuples grow without bound, which the report then shows. The table gets the per-table autovacuum settings
 * docs/operations.md recommends ({@link #TABLE_AUTOVACUUM}) unless {@code --table-autovacuum none}.
 *
 * <pre>
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.SustainedBenchmark
 *      [--url jdbc:postgresql://127.0.0.1:5432/test] [--minutes 10] [--rate 1000] [--retention 60s]
 *      [--sample-seconds 30] [--vacuum-seconds 0] [--table-autovacuum docs|none]
 *      [--out bench-results/sustained.md]
 * </pre>
 */
public final class SustainedBenchmark {
  /** The per-table settings docs/operations.md recommends for a hot outbox table. */
  static final String TABLE_AUTOVACUUM = "autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,"
      + " autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 1";

  private final Map<String, String> options;
  private final HikariDataSource dataSource;
  private final String table = "bench_sustained_" + UUID.randomUUID().toString().substring(0, 8);
  private final List<long[]> samples = new ArrayList<>();
  private final List<Double> claimMillis = new ArrayList<>();

  private SustainedBenchmark(Map<String, String> options) {
    this.options = options;
    this.dataSource = BenchSupport.postgresPool(options, 10);
  }

  public static void main(String[] args) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    SustainedBenchmark bench = new SustainedBenchmark(BenchSupport.parse(args));
    try {
      bench.run();
    } finally {
      bench.dataSource.close();
    }
  }

  private void run() throws Exception {
    int minutes = Integer.parseInt(options.getOrDefault("minutes", "10"));
    int rate = Integer.parseInt(options.getOrDefault("rate", "1000"));
    Duration retention = Duration.parse("PT" + options.getOrDefault("retention", "60s").toUpperCase());
    int sampleSeconds = Integer.parseInt(options.getOrDefault("sample-seconds", "30"));
    int vacuumSeconds = Integer.parseInt(options.getOrDefault("vacuum-seconds", "0"));
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
    boolean tableSettings = !options.getOrDefault("table-autovacuum", "docs").equals("none");
    if (tableSettings) {
      try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
        st.execute("ALTER TABLE \"" + table + "\" SET (" + TABLE_AUTOVACUUM + ")");
      }
    }
    OutboxMaintenance maintenance = OutboxMaintenance.builder().store(store).build();
    AtomicLong appended = new AtomicLong();
    AtomicLong dispatched = new AtomicLong();
    AtomicLong purged = new AtomicLong();
    ScheduledExecutorService timers = Executors.newScheduledThreadPool(3);
    Instant start = Instant.now();
    try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(e -> { })
        .useClaim(true).workers(2).pollInterval(Duration.ofMillis(50)).listener(new OutboxListener() {
          @Override public void onDispatched(OutboxEvent event, Duration publishTime) {
            dispatched.incrementAndGet();
          }
        }).build()) {
      dispatcher.start();
      long periodMicros = 1_000_000L / rate;
      timers.scheduleAtFixedRate(() -> append(store, appended), 0, periodMicros, TimeUnit.MICROSECONDS);
      timers.scheduleWithFixedDelay(() -> purged.addAndGet(maintenance.purgeDispatchedOlderThan(retention)),
          10, 10, TimeUnit.SECONDS);
      if (vacuumSeconds > 0) {
        timers.scheduleWithFixedDelay(this::vacuum, vacuumSeconds, vacuumSeconds, TimeUnit.SECONDS);
      }
      long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(minutes);
      while (System.nanoTime() < end) {
        Thread.sleep(TimeUnit.SECONDS.toMillis(sampleSeconds)); // the sampling period itself, not a wait for a condition
        sample(store, Duration.between(start, Instant.now()).toSeconds(), appended.get(), dispatched.get(),
            purged.get());
      }
    } finally {
      timers.shutdownNow();
      timers.awaitTermination(10, TimeUnit.SECONDS);
    }
    String report = report(minutes, rate, retention, vacuumSeconds, tableSettings, appended.get(), dispatched.get(),
        purged.get());
    System.out.println(report);
    BenchSupport.write(Path.of(options.getOrDefault("out", "bench-results/sustained.md")), report);
    BenchSupport.dropOutbox(dataSource, table);
  }

  private void vacuum() {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("VACUUM \"" + table + "\"");
    } catch (SQLException e) {
      System.err.println("vacuum failed: " + e.getMessage());
    }
  }

  private void append(JdbcOutboxStore store, AtomicLong appended) {
    long n = appended.incrementAndGet();
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, OutboxEvent.builder().aggregate("order", "o-" + (n % 5_000)).topic("order.changed")
          .payload("{\"order\":" + n + ",\"note\":\"sustained\"}").build());
      c.commit();
    } catch (SQLException | RuntimeException e) {
      System.err.println("append failed: " + e.getMessage());
    }
  }

  /** Seconds, appended, dispatched, purged, live, dead, heap bytes, index bytes, backlog; and a claim's latency. */
  private void sample(JdbcOutboxStore store, long seconds, long appended, long dispatched, long purged)
      throws SQLException {
    long t0 = System.nanoTime();
    List<OutboxEvent> claimed = store.claim("probe", 100, Duration.ofSeconds(30), false);
    claimMillis.add((System.nanoTime() - t0) / 1e6);
    store.release(claimed, Duration.ZERO);
    long backlog = store.countByStatus().getOrDefault(OutboxStatus.PENDING, 0L);
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
        "SELECT n_live_tup, n_dead_tup, pg_relation_size(relid), pg_indexes_size(relid)"
            + " FROM pg_stat_user_tables WHERE relname = ?")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        long[] s = {seconds, appended, dispatched, purged, rs.getLong(1), rs.getLong(2), rs.getLong(3),
            rs.getLong(4), backlog};
        samples.add(s);
        System.err.printf("  %4d s: appended %,d dispatched %,d purged %,d live %,d dead %,d heap %,d KB"
            + " indexes %,d KB backlog %,d claim %.1f ms%n", s[0], s[1], s[2], s[3], s[4], s[5], s[6] / 1024,
            s[7] / 1024, s[8], claimMillis.get(claimMillis.size() - 1));
      }
    }
  }

  private String report(int minutes, int rate, Duration retention, int vacuumSeconds, boolean tableSettings,
      long appended, long dispatched, long purged) throws SQLException {
    StringBuilder md = new StringBuilder("# Sustained run: a table that stays small\n\n");
    md.append("Run ").append(Instant.now()).append(", ").append(BenchSupport.postgresSettings(dataSource))
        .append(", load average ").append(BenchSupport.loadAverage()).append(" at the end. ").append(minutes)
        .append(" minutes at ").append(rate).append(" single-event transactions/s over 5,000 aggregates;")
        .append(" AsyncOutboxDispatcher, claim mode, 2 workers, a publisher that only counts; retention ")
        .append(retention.toSeconds()).append(" s, purged every 10 s. Appended ").append(String.format("%,d", appended))
        .append(", dispatched ").append(String.format("%,d", dispatched)).append(", purged ")
        .append(String.format("%,d", purged)).append(".\n\nAutovacuum: ").append(autovacuumSettings())
        .append(tableSettings ? "; on the outbox table " + TABLE_AUTOVACUUM : "; no settings on the table")
        .append("; ").append(vacuumRuns()).append(vacuumSeconds > 0
            ? "; the benchmark ran VACUUM on the outbox table every " + vacuumSeconds + " s"
            : "; no VACUUM of the benchmark's own")
        .append(".\n\n| s | live tuples | dead tuples | heap KB | indexes KB | backlog | claim of 100, ms |\n")
        .append("|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < samples.size(); i++) {
      long[] s = samples.get(i);
      md.append(String.format("| %d | %,d | %,d | %,d | %,d | %,d | %.1f |%n", s[0], s[4], s[5], s[6] / 1024,
          s[7] / 1024, s[8], claimMillis.get(i)));
    }
    int third = Math.max(1, samples.size() / 3);
    md.append(String.format("%n| bound | first third (max) | last third (max) |%n|---|---:|---:|%n"));
    for (int[] col : new int[][] {{5, 0}, {6, 1}, {7, 1}}) {
      String name = col[0] == 5 ? "dead tuples" : col[0] == 6 ? "heap KB" : "indexes KB";
      long div = col[1] == 1 ? 1024 : 1;
      md.append(String.format("| %s | %,d | %,d |%n", name, maxOf(0, third, col[0]) / div,
          maxOf(samples.size() - third, samples.size(), col[0]) / div));
    }
    md.append(String.format("| claim of 100, ms | %.1f | %.1f |%n", maxClaim(0, third),
        maxClaim(claimMillis.size() - third, claimMillis.size())));
    return md.toString();
  }

  private long maxOf(int from, int to, int column) {
    long max = 0;
    for (int i = from; i < to; i++) {
      max = Math.max(max, samples.get(i)[column]);
    }
    return max;
  }

  private double maxClaim(int from, int to) {
    double max = 0;
    for (int i = from; i < to; i++) {
      max = Math.max(max, claimMillis.get(i));
    }
    return max;
  }

  /** How often autovacuum (and a manual VACUUM) cleaned the outbox table during the run. */
  private String vacuumRuns() throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT autovacuum_count, vacuum_count FROM pg_stat_user_tables"
            + " WHERE relname = ?")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? "autovacuum ran " + rs.getLong(1) + " times on it, VACUUM " + rs.getLong(2) + " times"
            : "no statistics for the table";
      }
    }
  }

  private String autovacuumSettings() throws SQLException {
    StringBuilder out = new StringBuilder();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT name, setting FROM pg_settings WHERE name IN ('autovacuum',"
            + " 'autovacuum_naptime', 'autovacuum_vacuum_scale_factor', 'autovacuum_vacuum_threshold',"
            + " 'autovacuum_vacuum_cost_limit', 'autovacuum_vacuum_cost_delay') ORDER BY name")) {
      while (rs.next()) {
        out.append(out.length() == 0 ? "" : ", ").append(rs.getString(1)).append('=').append(rs.getString(2));
      }
    }
    return out.toString();
  }

}
