package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxMaintenance;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.ToLongFunction;

/**
 * Retention of dispatched rows on PostgreSQL, by partition drop against the batched delete: a table holds
 * {@code --rows} {@code DISPATCHED} rows created two days ago; the baseline, measured in the same run, is
 * {@link OutboxMaintenance#purgeDispatchedOlderThan} (batches of 1,000) on a plain table, against
 * {@link OutboxMaintenance#dropPartitionsOlderThan} on a table partitioned by hour, whose rows are all in its
 * {@code past} partition. Both take every dispatched row ({@code Duration.ZERO}). Measured: the wall time of the
 * call and the WAL it wrote ({@code pg_current_wal_lsn()} before and after; server-wide, so other sessions' WAL
 * counts too: run it on a quiet server). The purge also leaves dead rows for vacuum to reclaim later, which this
 * does not count.
 *
 * <p>With {@code --drain N}, each case also shows what retention costs a live drain: the table holds, behind its
 * dispatched rows, {@code N} pending events due now (over 10,000 aggregates; on the partitioned table in the
 * current hour's partition), drained by one dispatcher with the drain scenarios' settings (claim mode,
 * throughput, batches of {@value BenchSupport#DRAIN_BATCH}, a publisher that does nothing). Once a quarter of
 * them went, retention starts on another thread and connection: the purge takes what is older than an hour (the
 * rows two days old, not the drain's own marks), the drop takes every partition whose range ended (the one
 * holding the rows two days old; the current one holds the backlog). Reported: the drain's events/s in the passes
 * that overlapped the retention call against those that did not (the baseline, the same drain on the same table),
 * with the longest pass that overlapped it; the WAL column is left out, since the drain writes WAL too. A
 * small drain beside each retention warms up first, unreported.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.PartitionRetentionBenchmark \
 *      [--url U] [--user U] [--password P] [--rows 1000000] [--rounds 1] [--drain 0]
 *      [--out bench-results/partition-retention.md]
 * </pre>
 */
public final class PartitionRetentionBenchmark {
  private static final String PURGE = "purgeDispatchedOlderThan, plain table (baseline)";
  private static final String DROP = "dropPartitionsOlderThan, table partitioned by hour";

  private final Map<String, String> options;
  private final HikariDataSource dataSource;

  private PartitionRetentionBenchmark(Map<String, String> options) {
    this.options = options;
    this.dataSource = BenchSupport.postgresPool(options, 3);
  }

  public static void main(String[] args) throws Exception {
    PartitionRetentionBenchmark bench = new PartitionRetentionBenchmark(BenchSupport.parse(args));
    try {
      bench.run();
    } finally {
      bench.dataSource.close();
    }
  }

  /**
   * One retention call: its seconds, the WAL bytes written meanwhile, what it returned, and the drain beside it
   * (null without {@code --drain}).
   */
  private record Result(double seconds, long walBytes, long removed, DrainBeside drain) {}

  private void run() throws Exception {
    int rows = Integer.parseInt(options.getOrDefault("rows", "1000000"));
    int rounds = Integer.parseInt(options.getOrDefault("rounds", "1"));
    int drain = Integer.parseInt(options.getOrDefault("drain", "0"));
    if (drain > 0) { // the JIT and the driver's first statements, so that the first baseline does not pay for them
      System.err.println("warm-up");
      int warmUp = Math.min(drain, 10_000);
      measure(1_000, warmUp, null, m -> m.purgeDispatchedOlderThan(Duration.ofHours(1)));
      measure(1_000, warmUp, Duration.ofHours(1), m -> m.dropPartitionsOlderThan(Duration.ZERO));
    }
    List<Result[]> results = new ArrayList<>();
    for (int round = 1; round <= rounds; round++) {
      System.err.printf("round %d/%d%n", round, rounds);
      // beside a drain, the purge must leave the drain's own marks: it takes what is older than an hour
      Duration purgeAge = drain > 0 ? Duration.ofHours(1) : Duration.ZERO;
      Result purge = measure(rows, drain, null, m -> m.purgeDispatchedOlderThan(purgeAge));
      Result drop = measure(rows, drain, Duration.ofHours(1), m -> m.dropPartitionsOlderThan(Duration.ZERO));
      results.add(new Result[] {purge, drop});
    }
    String report = drain > 0 ? DrainBeside.report(rows, drain, results.stream().map(r -> new DrainBeside[] {
        r[0].drain(), r[1].drain()}).toList(), new String[] {PURGE, DROP}) : report(rows, results);
    System.out.println(report);
    BenchSupport.write(Path.of(options.getOrDefault("out", "bench-results/partition-retention.md")), report);
  }

  /**
   * Loads a fresh table ({@code interval} null: a plain one) with {@code rows} dispatched rows and {@code pending}
   * events behind them, then times {@code retention} on it, alone or beside a drain of the pending events.
   */
  private Result measure(int rows, int pending, Duration interval, ToLongFunction<OutboxMaintenance> retention)
      throws SQLException {
    String table = "bench_retention_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore.Builder builder = JdbcOutboxStore.builder().dataSource(dataSource).table(table);
    JdbcOutboxStore store = (interval == null ? builder : builder.partitionInterval(interval)).build();
    store.createSchema();
    try {
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        BenchSupport.insertDispatched(s, table, rows);
        if (pending > 0) {
          // statistics first: without them a partition of millions of rows looks as if an id could match
          // thousands, and the id trigger of each pending insert would scan the partitions instead of probing
          s.execute("ANALYZE \"" + table + "\"");
          BenchSupport.insertPending(s, table, BenchSupport.V7, pending, 10_000);
        }
        s.execute("VACUUM ANALYZE \"" + table + "\"");
      }
      OutboxMaintenance maintenance = OutboxMaintenance.builder().store(store).build();
      if (pending > 0) {
        DrainBeside drain = DrainBeside.run(store, pending, () -> retention.applyAsLong(maintenance));
        return new Result(drain.retentionSeconds(), 0, drain.removed(), drain);
      }
      String before = walPosition();
      long t0 = System.nanoTime();
      long removed = retention.applyAsLong(maintenance);
      double seconds = (System.nanoTime() - t0) / 1e9;
      return new Result(seconds, walBytesSince(before), removed, null);
    } finally {
      BenchSupport.dropOutbox(dataSource, table);
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP FUNCTION IF EXISTS \"" + table + "_id_fn\"()");
      }
    }
  }

  private String walPosition() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT CAST(pg_current_wal_lsn() AS text)")) {
      rs.next();
      return rs.getString(1);
    }
  }

  private long walBytesSince(String position) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT CAST(pg_wal_lsn_diff(pg_current_wal_lsn(), CAST('" + position
            + "' AS pg_lsn)) AS bigint)")) { // position: an LSN the server gave, e.g. 0/1A2B3C
      rs.next();
      return rs.getLong(1);
    }
  }

  private static String report(int rows, List<Result[]> results) {
    StringBuilder out = new StringBuilder("# Retention of dispatched rows: partition drop against batched delete\n\n")
        .append(String.format("%,d DISPATCHED rows created two days ago; ratios against the baseline of the same"
            + " round.%n%n", rows))
        .append("| round | retention | removed | seconds | WAL | time / baseline | WAL / baseline |\n")
        .append("|---:|---|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < results.size(); i++) {
      Result base = results.get(i)[0];
      for (int k = 0; k < 2; k++) {
        Result r = results.get(i)[k];
        out.append(String.format("| %d | %s | %,d %s | %.2f | %s | %.4f | %.5f |%n", i + 1, k == 0 ? PURGE : DROP,
            r.removed(), k == 0 ? "rows" : "partition(s)", r.seconds(), bytes(r.walBytes()),
            r.seconds() / base.seconds(), (double) r.walBytes() / base.walBytes()));
      }
    }
    return out.append("\nload average ").append(BenchSupport.loadAverage()).append('\n').toString();
  }

  private static String bytes(long n) {
    return n >= 1 << 20 ? String.format("%,.1f MB", n / 1048576.0) : String.format("%,.1f kB", n / 1024.0);
  }
}
