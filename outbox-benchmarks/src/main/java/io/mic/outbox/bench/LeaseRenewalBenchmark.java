package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the lease's length costs PostgreSQL: the row versions written per event (claim, renewals, mark) and the
 * drain rate, for a lease of 60 s and of 3 s, with publications of a few durations. While a batch is in flight
 * its leases are renewed every third of the lease: one {@code UPDATE} of the batch's unsettled rows, one new
 * row version per row (HOT: {@code lease_until} is in no index), and the successes so far are marked with it.
 * A batch published within a third of the lease is never renewed.
 *
 * <p>Each case drains a backlog of {@code --events} events (distinct aggregates, claim mode, one worker,
 * {@code --batch}) through a publisher that takes the given time per event; the row versions are the table's
 * {@code n_tup_upd} from {@code pg_stat_user_tables}, read after the dispatcher's connections closed (a session
 * flushes its statistics when it ends).
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.LeaseRenewalBenchmark \
 *      [--url U] [--user U] [--password P] [--events 2000] [--batch 100] [--publish-ms 0,5,20]
 *      [--out bench-results/lease-renewal.md]
 * </pre>
 */
public final class LeaseRenewalBenchmark {
  private static final List<Duration> LEASES = List.of(Duration.ofSeconds(60), Duration.ofSeconds(3));

  private LeaseRenewalBenchmark() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = BenchSupport.parse(args);
    int events = Integer.parseInt(options.getOrDefault("events", "2000"));
    int batch = Integer.parseInt(options.getOrDefault("batch", "100"));
    List<Long> publishMillis = new ArrayList<>();
    for (String ms : options.getOrDefault("publish-ms", "0,5,20").split(",")) {
      publishMillis.add(Long.parseLong(ms.trim()));
    }
    StringBuilder report = new StringBuilder("# Lease renewals: row versions per event and drain rate\n\n")
        .append("PostgreSQL, ").append(events).append(" events of distinct aggregates, claim mode, one worker, batch ")
        .append(batch).append(". Load average before: ").append(BenchSupport.loadAverage()).append(".\n\n")
        .append("| publication | lease | row versions per event | of them renewals | events/s |\n")
        .append("|---:|---:|---:|---:|---:|\n");
    try (HikariDataSource ds = BenchSupport.postgresPool(options, 4)) {
      run(options, ds, events, batch, 0, LEASES.get(0)); // warm-up, not reported
      for (long ms : publishMillis) {
        for (Duration lease : LEASES) {
          report.append(run(options, ds, events, batch, ms, lease));
        }
      }
    }
    report.append("\nBaseline: two row versions per event (the claim and the mark); the rest are renewals.\n");
    System.out.print(report);
    BenchSupport.write(Path.of(options.getOrDefault("out", "bench-results/lease-renewal.md")), report.toString());
  }

  private static String run(Map<String, String> options, HikariDataSource ds, int events, int batch,
      long publishMillis, Duration lease) throws Exception {
    String table = "bench_lease_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).table(table).build();
    store.createSchema();
    try {
      BenchSupport.appendBacklog(ds, store, table, BenchSupport.orders(events, "order.created"));
      long before = updates(ds, table);
      AtomicInteger published = new AtomicInteger();
      long t0 = System.nanoTime();
      try (HikariDataSource own = BenchSupport.postgresPool(options, 4);
          AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder()
          .store(JdbcOutboxStore.builder().dataSource(own).table(table).build()).useClaim(true)
          .leaseTtl(lease).batchSize(batch).dispatchFn(e -> {
            if (publishMillis > 0) {
              Thread.sleep(publishMillis);
            }
            published.incrementAndGet();
          }).build()) {
        dispatcher.start();
        while (pending(ds, table) > 0) {
          Thread.sleep(50);
        }
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      Thread.sleep(1_000); // the pool closed its connections: their sessions flush their statistics as they end
      double perEvent = (updates(ds, table) - before) / (double) events;
      return String.format("| %d ms | %d s | %.2f | %.2f | %.0f |%n", publishMillis, lease.toSeconds(), perEvent,
          perEvent - 2, events / seconds);
    } finally {
      BenchSupport.dropOutbox(ds, table);
    }
  }

  private static long pending(HikariDataSource ds, String table) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM \"" + table + "\" WHERE status <> 'DISPATCHED'")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** The table's updated row versions so far, as the sessions that ended reported them. */
  private static long updates(HikariDataSource ds, String table) throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = ?")) {
      c.createStatement().execute("SELECT pg_stat_clear_snapshot()");
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : 0;
      }
    }
  }
}
