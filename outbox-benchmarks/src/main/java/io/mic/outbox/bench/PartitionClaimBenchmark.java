package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.ClaimRequest;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Claim latency on PostgreSQL with partitions of dispatched history. Two tables hold the same rows: {@code --history}
 * {@code DISPATCHED} rows spread evenly over the {@code --partitions} hours before the current one (default 10),
 * then a live backlog of {@code --pending} events due now over {@code --aggregates} aggregates. One table is
 * partitioned by hour ({@code partitionInterval(Duration.ofHours(1))}), each hour of history in a partition of its
 * own; the baseline, measured in the same run, is a plain table. The history is loaded without the id trigger
 * (the rows are made unique by construction), then both tables are vacuumed and analysed.
 *
 * <p>Timed, {@code --claims} times per mode and table: a claim of {@code --batch} events as a dispatcher in claim
 * mode makes it (throughput mode; ordered mode with runs of {@value OutboxDispatcher#DEFAULT_AGGREGATE_RUN}),
 * then the mark of those events as dispatched, which finds them by id and so probes every partition's primary
 * key. The two tables take turns claim by claim, so both meet the same moments of the machine's load; a few
 * claims of each kind warm up first, untimed.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.PartitionClaimBenchmark \
 *      [--url U] [--user U] [--password P] [--history 1000000] [--partitions 10] [--pending 100000]
 *      [--aggregates 10000] [--batch 100] [--claims 200] [--out bench-results/partition-claim.md]
 * </pre>
 */
public final class PartitionClaimBenchmark {
  private static final Duration HOUR = Duration.ofHours(1);
  private static final Duration LEASE = Duration.ofMinutes(1);
  private static final int WARM_UP = 20;
  private static final String PLAIN = "plain table (baseline)";
  private static final String PARTITIONED = "partitioned by hour";
  private static final DateTimeFormatter NAME = DateTimeFormatter.ofPattern("'p'yyyyMMdd'_'HHmm")
      .withZone(ZoneOffset.UTC);

  private final HikariDataSource dataSource;
  private final int history;
  private final int partitions;
  private final int pending;
  private final int aggregates;
  private final int batch;
  private final int claims;

  private PartitionClaimBenchmark(Map<String, String> options) {
    this.history = Integer.parseInt(options.getOrDefault("history", "1000000"));
    this.partitions = Integer.parseInt(options.getOrDefault("partitions", "10"));
    this.pending = Integer.parseInt(options.getOrDefault("pending", "100000"));
    this.aggregates = Integer.parseInt(options.getOrDefault("aggregates", "10000"));
    this.batch = Integer.parseInt(options.getOrDefault("batch", "100"));
    this.claims = Integer.parseInt(options.getOrDefault("claims", "200"));
    int needed = 2 * (WARM_UP + claims) * batch;
    if (pending < needed) {
      throw new IllegalArgumentException("--pending " + pending + " is too small for " + claims + " claims of "
          + batch + " in two modes after the warm-up: give --pending " + needed + " or more");
    }
    this.dataSource = BenchSupport.postgresPool(options, 2);
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> options = BenchSupport.parse(args);
    PartitionClaimBenchmark bench = new PartitionClaimBenchmark(options);
    try {
      String report = bench.run();
      System.out.println(report);
      BenchSupport.write(Path.of(options.getOrDefault("out", "bench-results/partition-claim.md")), report);
    } finally {
      bench.dataSource.close();
    }
  }

  /** One table under test and the times of its claims and marks, in ms. */
  private record Subject(String label, String table, JdbcOutboxStore store, List<Double> claimMs,
      List<Double> markMs) {
    Subject(String label, String table, JdbcOutboxStore store) {
      this(label, table, store, new ArrayList<>(), new ArrayList<>());
    }
  }

  private String run() throws SQLException {
    String suffix = UUID.randomUUID().toString().substring(0, 8);
    String plainTable = "bench_pclaim_plain_" + suffix;
    String partTable = "bench_pclaim_part_" + suffix;
    try {
      JdbcOutboxStore plainStore = JdbcOutboxStore.builder().dataSource(dataSource).table(plainTable).build();
      JdbcOutboxStore partStore = JdbcOutboxStore.builder().dataSource(dataSource).table(partTable)
          .partitionInterval(HOUR).build();
      plainStore.createSchema();
      partStore.createSchema();
      Instant current = currentHour(partTable);
      partitionHistory(partTable, current);
      System.err.printf("loading %,d dispatched rows and %,d pending events into each table%n", history, pending);
      for (String table : List.of(plainTable, partTable)) {
        load(table, current);
      }
      int holding = partitionsHoldingHistory(partTable);
      if (holding != partitions) {
        throw new IllegalStateException("the history is in " + holding + " partitions, not " + partitions);
      }
      List<Subject> subjects = List.of(new Subject(PLAIN, plainTable, plainStore),
          new Subject(PARTITIONED, partTable, partStore));
      StringBuilder rows = new StringBuilder();
      for (boolean ordered : new boolean[] {false, true}) {
        ClaimRequest request = ordered
            ? ClaimRequest.of("bench", batch, LEASE).inRuns(OutboxDispatcher.DEFAULT_AGGREGATE_RUN)
            : ClaimRequest.of("bench", batch, LEASE);
        String mode = ordered ? "ordered, runs of " + OutboxDispatcher.DEFAULT_AGGREGATE_RUN : "throughput";
        rows.append(measure(subjects, request, mode));
      }
      return report(partitionCount(partTable), rows);
    } finally {
      for (String table : List.of(plainTable, partTable)) {
        BenchSupport.dropOutbox(dataSource, table);
        sql("DROP FUNCTION IF EXISTS \"" + table + "_id_fn\"()");
      }
    }
  }

  /** Warms up, then times the claims (and marks) of each table in turn; returns the report's rows. */
  private String measure(List<Subject> subjects, ClaimRequest request, String mode) {
    for (Subject s : subjects) {
      s.claimMs().clear();
      s.markMs().clear();
    }
    for (int i = 0; i < WARM_UP + claims; i++) {
      for (int k = 0; k < subjects.size(); k++) {
        Subject s = subjects.get((i + k) % subjects.size()); // each table goes first every other claim
        long t0 = System.nanoTime();
        List<OutboxEvent> claimed = s.store().claim(request);
        long t1 = System.nanoTime();
        int marked = s.store().markDispatched(claimed).size();
        long t2 = System.nanoTime();
        if (claimed.size() != batch || marked != batch) {
          throw new IllegalStateException(s.label() + ": claimed " + claimed.size() + " and marked " + marked
              + " of a batch of " + batch);
        }
        if (i >= WARM_UP) {
          s.claimMs().add((t1 - t0) / 1e6);
          s.markMs().add((t2 - t1) / 1e6);
        }
      }
    }
    Subject base = subjects.get(0);
    StringBuilder out = new StringBuilder();
    for (Subject s : subjects) {
      List<Double> claim = sorted(s.claimMs());
      List<Double> mark = sorted(s.markMs());
      System.err.printf("%s, %s: claim median %.2f ms, p95 %.2f ms; mark median %.2f ms%n", mode, s.label(),
          BenchSupport.median(claim), BenchSupport.percentile(claim, 0.95), BenchSupport.median(mark));
      out.append(String.format("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |%n", mode, s.label(),
          BenchSupport.median(claim), BenchSupport.percentile(claim, 0.95), BenchSupport.median(mark),
          BenchSupport.percentile(mark, 0.95), BenchSupport.median(claim) / BenchSupport.median(base.claimMs()),
          BenchSupport.median(mark) / BenchSupport.median(base.markMs())));
    }
    return out.toString();
  }

  private String report(int partitionCount, StringBuilder rows) throws SQLException {
    return new StringBuilder("# Claim latency with partitions of dispatched history (PostgreSQL)\n\n")
        .append(String.format("Each table: %,d DISPATCHED rows over the %d hours before the current one, then %,d"
            + " pending events over %,d aggregates. The partitioned table has %d partitions (%d of history, the"
            + " current hour, those ahead, past and future). %d claims of %d per mode and table, each followed"
            + " by the mark of its events, the tables taking turns; ratios of medians against the plain table in"
            + " the same run.%n%n", history, partitions, pending, aggregates, partitionCount, partitions, claims,
            batch))
        .append("| claim | table | claim median (ms) | claim p95 (ms) | mark median (ms) | mark p95 (ms)"
            + " | claim / baseline | mark / baseline |\n")
        .append("|---|---|---:|---:|---:|---:|---:|---:|\n")
        .append(rows)
        .append("\n").append(BenchSupport.postgresSettings(dataSource)).append("; load average ")
        .append(BenchSupport.loadAverage()).append('\n').toString();
  }

  /** The start of the current hour as the partitioned table's partitions align it: the upper bound of its past. */
  private Instant currentHour(String table) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT CAST(substring(pg_get_expr(relpartbound, oid)"
            + " from 'TO \\(''([^'']+)''\\)') AS timestamptz) FROM pg_class"
            + " WHERE oid = to_regclass('\"" + table + "_past\"')")) {
      if (!rs.next()) {
        throw new IllegalStateException("no partition " + table + "_past");
      }
      return rs.getTimestamp(1).toInstant();
    }
  }

  /** Makes the past end {@code partitions} hours before {@code current}, and one partition of each hour after it. */
  private void partitionHistory(String table, Instant current) throws SQLException {
    sql("DROP TABLE \"" + table + "_past\"");
    Instant start = current.minus(HOUR.multipliedBy(partitions));
    sql("CREATE TABLE \"" + table + "_past\" PARTITION OF \"" + table + "\" FOR VALUES FROM (MINVALUE) TO ('"
        + start + "')");
    for (Instant t = start; t.isBefore(current); t = t.plus(HOUR)) {
      sql("CREATE TABLE \"" + table + "_" + NAME.format(t) + "\" PARTITION OF \"" + table + "\" FOR VALUES FROM ('"
          + t + "') TO ('" + t.plus(HOUR) + "')");
    }
  }

  /**
   * The history, evenly over the hours before {@code current}, then the backlog, created now; in one transaction
   * without the id trigger ({@code session_replication_role = replica}), the ids unique by construction.
   */
  private void load(String table, Instant current) throws SQLException {
    long spanMicros = HOUR.multipliedBy(partitions).toNanos() / 1_000;
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      s.execute("SET LOCAL session_replication_role = replica");
      s.execute("INSERT INTO \"" + table + "\" (id, aggregate_type, aggregate_id, topic, payload, headers,"
          + " priority, status, lease_owner, created_at, next_attempt_at, dispatched_at) SELECT "
          + BenchSupport.V7 + ", 'order', 'agg-' || (g % " + aggregates + "), 'order.changed',"
          + " json_build_object('n', g), '{}', 0, 'DISPATCHED', 'w', t, t, t + interval '1 second' FROM (SELECT g,"
          + " CAST('" + current + "' AS timestamptz) - interval '" + spanMicros + " microseconds'"
          + " + CAST(g - 1 AS bigint) * " + (spanMicros / history) + " * interval '1 microsecond' AS t"
          + " FROM generate_series(1, " + history + ") AS g) AS x");
      BenchSupport.insertPending(s, table, BenchSupport.V7, pending, aggregates);
      c.commit();
      c.setAutoCommit(true);
      s.execute("VACUUM ANALYZE \"" + table + "\"");
    }
  }

  private int partitionsHoldingHistory(String table) throws SQLException {
    return count("SELECT count(DISTINCT tableoid) FROM \"" + table + "\" WHERE status = 'DISPATCHED'");
  }

  private int partitionCount(String table) throws SQLException {
    return count("SELECT count(*) FROM pg_inherits WHERE inhparent = to_regclass('\"" + table + "\"')");
  }

  private int count(String query) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(query)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private void sql(String statement) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }

  private static List<Double> sorted(List<Double> values) {
    List<Double> copy = new ArrayList<>(values);
    copy.sort(null);
    return copy;
  }
}
