package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.ClaimRequest;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * What held aggregates cost the others' claims on PostgreSQL. A table holds {@code --held} aggregates (default
 * 10,000), each a dead event with {@code --waiting} events behind it (default 3), all older than the
 * {@code --free} events of other aggregates (default 5,000): the worst case, where the held aggregates' rows come
 * first in dispatch order. A dispatcher's claim (ordered, holding, runs of 100, a batch of 100) is timed
 * {@code --claims} times, each claim released untried afterwards so the next finds the same table; the baseline
 * is the same claim on a table with the free events only.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.HeldClaimBenchmark \
 *      [--url U] [--user U] [--password P] [--held 10000] [--waiting 3] [--free 5000] [--claims 200]
 *      [--out bench-results/held-claim.md]
 * </pre>
 */
public final class HeldClaimBenchmark {
  private static final int BATCH = 100;

  public static void main(String[] args) throws Exception {
    var options = BenchSupport.parse(args);
    int held = Integer.parseInt(options.getOrDefault("held", "10000"));
    int waiting = Integer.parseInt(options.getOrDefault("waiting", "3"));
    int free = Integer.parseInt(options.getOrDefault("free", "5000"));
    int claims = Integer.parseInt(options.getOrDefault("claims", "200"));
    StringBuilder md = new StringBuilder("# A claim beside held aggregates (PostgreSQL)\n\n");
    md.append(free).append(" events of other aggregates, newer than every held aggregate's; ordered claims of ")
        .append(BATCH).append(" holding aggregates, runs of 100, each released untried; ").append(claims)
        .append(" claims per row.\n\n| table | claim median (ms) | p95 (ms) | claimed |\n|---|---:|---:|---:|\n");
    try (HikariDataSource ds = BenchSupport.postgresPool(options, 2)) {
      md.append(measure(ds, 0, waiting, free, claims));
      md.append(measure(ds, held, waiting, free, claims));
    }
    System.out.println(md);
    BenchSupport.write(Path.of(options.getOrDefault("out", "bench-results/held-claim.md")), md.toString());
  }

  /** One row of the report: the claims on a table with {@code held} held aggregates. */
  private static String measure(HikariDataSource ds, int held, int waiting, int free, int claims)
      throws SQLException {
    String table = "bench_held_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).table(table).build();
    store.createSchema();
    try {
      fill(ds, table, held, waiting, free);
      if (store.heldAggregates().size() != held) {
        throw new IllegalStateException("expected " + held + " held aggregates, found " + store.heldAggregates().size());
      }
      ClaimRequest request = ClaimRequest.of("bench", BATCH, Duration.ofMinutes(1)).inRuns(100).holdingOnDeadLetter();
      List<Double> millis = new ArrayList<>();
      int claimed = 0;
      for (int i = 0; i < claims; i++) {
        long t0 = System.nanoTime();
        List<OutboxEvent> batch = store.claim(request);
        millis.add((System.nanoTime() - t0) / 1e6);
        if (batch.stream().anyMatch(e -> !e.aggregateId().startsWith("free-"))) {
          throw new IllegalStateException("a claim took an event of a held aggregate");
        }
        claimed = batch.size();
        store.release(batch, Duration.ZERO);
      }
      millis.sort(null);
      System.err.printf("%d held aggregates: median %.2f ms, p95 %.2f ms%n", held, BenchSupport.median(millis),
          BenchSupport.percentile(millis, 0.95));
      return String.format("| %,d held aggregates (%d waiting each) | %.2f | %.2f | %d |%n", held, waiting,
          BenchSupport.median(millis), BenchSupport.percentile(millis, 0.95), claimed);
    } finally {
      BenchSupport.dropOutbox(ds, table);
    }
  }

  /** The held aggregates' rows first (each one's oldest moved to the DLQ), then the free events. */
  private static void fill(HikariDataSource ds, String table, int held, int waiting, int free) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      if (held > 0) {
        BenchSupport.insertPending(s, table, BenchSupport.V7, held * (1 + waiting), held);
        s.execute("UPDATE \"" + table + "\" SET status = 'DLQ', last_error = 'poison' WHERE id IN (SELECT DISTINCT ON"
            + " (aggregate_id) id FROM \"" + table + "\" ORDER BY aggregate_id, created_at, id)");
      }
      s.execute("INSERT INTO \"" + table + "\" (id, aggregate_type, aggregate_id, topic, payload, headers, priority,"
          + " created_at, next_attempt_at) SELECT " + BenchSupport.V7 + ", 'order', 'free-' || g, 'order.changed',"
          + " json_build_object('n', g), '{}', 0, clock_timestamp(), clock_timestamp()"
          + " FROM generate_series(1, " + free + ") AS g");
      s.execute("VACUUM ANALYZE \"" + table + "\"");
    }
  }
}
