package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
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
import java.util.concurrent.ThreadLocalRandom;

/**
 * Measures JdbcOutboxStore against its own operations and raw SQL on the same PostgreSQL, in the same run, and writes a Markdown
 * report. Each scenario runs {@code rounds} times, interleaved with the others; the report gives medians
 * and the ratios the project tracks.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -jar outbox-benchmarks/target/outbox-benchmarks.jar [--url U] [--user U] [--password P]
 *      [--events 200000] [--aggregates 10000] [--rounds 3] [--out bench-results/postgres.md]
 *      [--only drain,hot,append,locks]
 * </pre>
 *
 * <p>The append baseline is the best hand-written JDBC for the same job: one prepared statement per
 * connection, a batch of 1,000 rows per transaction with the driver's defaults, into a minimal outbox
 * (primary key + the partial claim index), the database clock filling the times.
 * </pre>
 */
public final class PostgresBenchmark {
  private static final int BATCH = 500;
  private static final Duration LEASE = Duration.ofMinutes(1);
  private static final String DRAIN_BASELINE = "drain: store.claim + store.markDispatched, no dispatcher (baseline)";
  private static final int APPEND_BATCH = 1_000;
  private static final String APPEND_BASELINE =
      "append: plain JDBC batch INSERT, minimal table, 1,000 per tx (baseline)";
  private static final String APPEND_SHIPPED = "append: plain JDBC batch INSERT, shipped schema, 1,000 per tx";
  private static final String APPEND_NO_LOCK =
      "append: JdbcOutboxStore.append(c, events), lockAggregateOnAppend(false), 1,000 per tx";
  private static final String APPEND_STORE = "append: JdbcOutboxStore.append(c, events), defaults, 1,000 per tx";
  private static final String SINGLE_BASELINE = "append: plain INSERT, minimal table, 1 per tx (baseline)";
  private static final String SINGLE_NO_LOCK =
      "append: JdbcOutboxStore.append(c, event), lockAggregateOnAppend(false), 1 per tx";
  private static final String SINGLE_STORE = "append: JdbcOutboxStore.append(c, event), defaults, 1 per tx";
  private final List<String> notes = new ArrayList<>();
  private static final String HOT = "hot aggregates (10 x 300 events): ";
  private static final int HOT_AGGREGATES = 10;
  private static final int HOT_EVENTS = 3_000;
  private final Map<String, String> options;
  private final HikariDataSource dataSource;
  private final Map<String, List<Double>> rates = new LinkedHashMap<>();
  private final int events;
  private final int aggregates;

  private PostgresBenchmark(Map<String, String> options) {
    this.options = options;
    this.events = Integer.parseInt(options.getOrDefault("events", "200000"));
    this.aggregates = Integer.parseInt(options.getOrDefault("aggregates", "10000"));
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(options.getOrDefault("url", "jdbc:postgresql://127.0.0.1:5432/test"));
    config.setUsername(options.getOrDefault("user", "postgres"));
    config.setPassword(options.getOrDefault("password", ""));
    config.setMaximumPoolSize(4);
    this.dataSource = new HikariDataSource(config);
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> options = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("expected --option value, got " + args[i]);
      }
      options.put(args[i].substring(2), args[i + 1]);
    }
    PostgresBenchmark bench = new PostgresBenchmark(options);
    try (bench.dataSource) {
      bench.run(Integer.parseInt(options.getOrDefault("rounds", "3")));
    }
  }

  private void run(int rounds) throws Exception {
    for (int round = 1; round <= rounds; round++) {
      System.err.printf("round %d/%d%n", round, rounds);
      if (runs("drain")) {
        record(DRAIN_BASELINE, drainStore());
        record("drain: OutboxDispatcher, claim, throughput mode", drainDispatcher(false));
        record("drain: OutboxDispatcher, claim, ordered mode", drainDispatcher(true));
      }
      if (runs("hot")) {
        record(HOT + "throughput mode (baseline)", drainHot(false, 1));
        record(HOT + "ordered, heads only (aggregateRun 1)", drainHot(true, 1));
        record(HOT + "ordered, runs (aggregateRun 100, default)", drainHot(true, 100));
      }
      if (runs("append")) {
        record(APPEND_BASELINE, appendBatch(Writer.PLAIN_MINIMAL));
        record(APPEND_SHIPPED, appendBatch(Writer.PLAIN_SHIPPED));
        record(APPEND_NO_LOCK, appendBatch(Writer.STORE_NO_LOCK));
        record(APPEND_STORE, appendBatch(Writer.STORE));
        record(SINGLE_BASELINE, appendSingle(Writer.PLAIN_MINIMAL));
        record(SINGLE_NO_LOCK, appendSingle(Writer.STORE_NO_LOCK));
        record(SINGLE_STORE, appendSingle(Writer.STORE));
      }
    }
    if (runs("locks")) {
      int limit = lockLimit();
      notes.add("Advisory locks: one transaction appending distinct aggregates with the default settings "
          + (limit == 0 ? "succeeded up to 40,000 aggregates" : "succeeded with " + String.format("%,d", limit)
          + " and failed with " + String.format("%,d", limit + 500) + " (out of shared memory)")
          + "; max_locks_per_transaction=" + setting("max_locks_per_transaction") + ", max_connections="
          + setting("max_connections") + ", max_prepared_transactions=" + setting("max_prepared_transactions")
          + ".");
    }
    String report = report();
    System.out.println(report);
    Path out = Path.of(options.getOrDefault("out", "bench-results/postgres.md"));
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    Files.writeString(out, report);
    System.err.println("written to " + out.toAbsolutePath());
  }

  // ------------------------------------------------------------------ drain

  private String loadBacklog() throws SQLException {
    return loadBacklog(events, aggregates);
  }

  private String loadBacklog(int events, int aggregates) throws SQLException {
    String table = "bench_outbox_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore.builder().dataSource(dataSource).table(table).build().createSchema();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("INSERT INTO " + table + " (id, aggregate_type, aggregate_id, topic, payload, headers, priority,"
          + " created_at, next_attempt_at) SELECT gen_random_uuid(), 'order', 'agg-' || (g % " + aggregates + "),"
          + " 'order.changed', json_build_object('order', g % " + aggregates + ", 'n', g, 'note', 'benchmark'),"
          + " '{}', 0, clock_timestamp(), clock_timestamp() FROM generate_series(1, " + events + ") AS g");
      s.execute("VACUUM ANALYZE " + table);
    }
    return table;
  }

  /**
   * The baseline: the store's own claim and batched mark, called in a loop on one thread, without a
   * dispatcher (no listener, no backoff, no publication), so the ratio shows what the dispatcher costs.
   */
  private double drainStore() throws SQLException {
    String table = loadBacklog();
    try {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
      long t0 = System.nanoTime();
      int done = 0;
      while (true) {
        List<OutboxEvent> claimed = store.claim("store#" + done, BATCH, LEASE, false);
        if (claimed.isEmpty()) {
          break;
        }
        done += store.markDispatched(claimed).size();
      }
      return check(done, events, t0);
    } finally {
      drop(table);
    }
  }

  private double drainDispatcher(boolean ordered) throws SQLException {
    return drain(loadBacklog(), ordered, OutboxDispatcher.DEFAULT_AGGREGATE_RUN, events);
  }

  private double drainHot(boolean ordered, int run) throws SQLException {
    return drain(loadBacklog(HOT_EVENTS, HOT_AGGREGATES), ordered, run, HOT_EVENTS);
  }

  private double drain(String table, boolean ordered, int run, int expected) throws SQLException {
    try {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
      OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(e -> {})
          .useClaim(true).preserveAggregateOrder(ordered).aggregateRun(run).batchSize(BATCH).build();
      long t0 = System.nanoTime();
      int done = 0;
      int n;
      while ((n = dispatcher.dispatchOnce().dispatched()) > 0) {
        done += n;
      }
      return check(done, expected, t0);
    } finally {
      drop(table);
    }
  }

  // ------------------------------------------------------------------ append

  /**
   * Events for one run: in batches, every event of a batch has its own aggregate (a fresh one, as in
   * the batch goal); single events spread over 1,000 aggregates that already have events.
   */
  private List<OutboxEvent> newEvents(int n, boolean distinct) {
    List<OutboxEvent> list = new ArrayList<>(n);
    String run = UUID.randomUUID().toString().substring(0, 8);
    for (int i = 0; i < n; i++) {
      int agg = distinct ? i : ThreadLocalRandom.current().nextInt(1000);
      list.add(OutboxEvent.builder().aggregate("order", "agg-" + run + "-" + agg).topic("order.changed")
          .payload("{\"order\":" + agg + ",\"n\":" + i + ",\"note\":\"benchmark\"}").header("tenant", "acme").build());
    }
    return list;
  }

  /** Where the rows go and who writes them. */
  private enum Writer {
    /** Hand-written JDBC into a minimal outbox: primary key + the partial claim index (the baseline). */
    PLAIN_MINIMAL,
    /** The same hand-written JDBC into the table createSchema() ships: what its indexes cost. */
    PLAIN_SHIPPED,
    /** JdbcOutboxStore.append with lockAggregateOnAppend(false): sequence counter, no advisory lock. */
    STORE_NO_LOCK,
    /** JdbcOutboxStore.append with the defaults: advisory lock + sequence counter. */
    STORE
  }

  private double appendBatch(Writer writer) throws SQLException {
    return append(newEvents(Math.min(events, 50_000), true), APPEND_BATCH, writer);
  }

  private double appendSingle(Writer writer) throws SQLException {
    return append(newEvents(2_000, false), 1, writer);
  }

  private double append(List<OutboxEvent> list, int perTx, Writer writer) throws SQLException {
    String table = "bench_append_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table)
        .lockAggregateOnAppend(writer != Writer.STORE_NO_LOCK).build();
    store.createSchema();
    if (writer == Writer.PLAIN_MINIMAL) {
      minimal(table);
    }
    // what a user would write: the columns the event has, the database clock for the times
    String plain = "INSERT INTO \"" + table + "\" (id, aggregate_type, aggregate_id, topic, payload, headers, priority)"
        + " VALUES (?, ?, ?, ?, CAST(? AS json), CAST(? AS json), ?)";
    boolean viaStore = writer == Writer.STORE || writer == Writer.STORE_NO_LOCK;
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(plain)) {
      c.setAutoCommit(false);
      if (perTx == 1) { // the aggregates exist, as they do for most single appends
        for (OutboxEvent e : list.stream().map(OutboxEvent::aggregateId).distinct()
            .map(a -> OutboxEvent.builder().aggregate("order", a).topic("warm").payload("{}").build()).toList()) {
          store.append(c, e);
        }
        c.commit();
      }
      long t0 = System.nanoTime();
      for (int from = 0; from < list.size(); from += perTx) {
        List<OutboxEvent> tx = list.subList(from, Math.min(list.size(), from + perTx));
        if (viaStore) {
          if (tx.size() == 1) {
            store.append(c, tx.get(0));
          } else {
            store.append(c, tx);
          }
        } else {
          for (OutboxEvent e : tx) {
            ps.setObject(1, e.id());
            ps.setString(2, e.aggregateType());
            ps.setString(3, e.aggregateId());
            ps.setString(4, e.topic());
            ps.setString(5, e.payload());
            ps.setString(6, "{\"tenant\":\"acme\"}");
            ps.setInt(7, e.priority());
            if (tx.size() == 1) {
              ps.executeUpdate();
            } else {
              ps.addBatch();
            }
          }
          if (tx.size() > 1) {
            ps.executeBatch();
          }
        }
        c.commit();
      }
      return list.size() / ((System.nanoTime() - t0) / 1e9);
    } finally {
      drop(table);
    }
  }

  /** Leaves the primary key and the partial claim index: the least an outbox table needs. */
  private void minimal(String table) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      List<String> drop = new ArrayList<>();
      try (ResultSet rs = s.executeQuery("SELECT indexname FROM pg_indexes WHERE tablename = '" + table + "'"
          + " AND indexname NOT IN ('" + table + "_pkey', '" + table + "_claim_idx')")) {
        while (rs.next()) {
          drop.add(rs.getString(1));
        }
      }
      for (String index : drop) {
        s.execute("DROP INDEX \"" + index + "\"");
      }
    }
  }

  /**
   * The most distinct aggregates one transaction can append with the default advisory locks before
   * PostgreSQL runs out of lock table space, probed in steps of 500 up to 40,000 (0 = none failed).
   */
  private int lockLimit() throws SQLException {
    String table = "bench_locks_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
    int lastGood = 0;
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      for (int n = 500; n <= 40_000; n += 500) {
        try {
          store.append(c, newEvents(n, true));
          lastGood = n;
        } catch (RuntimeException e) {
          System.err.printf("  lock limit: %d distinct aggregates in one transaction failed: %s%n", n,
              e.getCause() != null ? e.getCause().getMessage() : e.getMessage());
          c.rollback();
          return lastGood;
        }
        c.rollback();
      }
      return 0;
    } finally {
      drop(table);
    }
  }

  // ------------------------------------------------------------------ reporting

  private double check(int done, int expected, long t0) {
    double rate = done / ((System.nanoTime() - t0) / 1e9);
    if (done != expected) {
      throw new IllegalStateException("drained " + done + " of " + expected + " events");
    }
    return rate;
  }

  private void drop(String table) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS \"" + table + "\"");
    }
  }

  private void record(String scenario, double rate) {
    rates.computeIfAbsent(scenario, k -> new ArrayList<>()).add(rate);
    System.err.printf("  %-60s %,10.0f events/s%n", scenario, rate);
  }

  private double median(String scenario) {
    List<Double> r = new ArrayList<>(rates.get(scenario));
    r.sort(null);
    return r.get(r.size() / 2);
  }

  private String report() throws SQLException {
    StringBuilder md = new StringBuilder();
    md.append("# PostgreSQL benchmark\n\n");
    md.append("Run ").append(Instant.now()).append(" on ").append(Runtime.getRuntime().availableProcessors())
        .append(" cores, Java ").append(System.getProperty("java.version")).append(", ").append(settings())
        .append(".\nBacklog: ").append(events).append(" events over ").append(aggregates)
        .append(" aggregates, batch ").append(BATCH).append(", no-op publisher, one dispatcher thread.\n\n");
    md.append("| scenario | median events/s | all rounds |\n|---|---:|---|\n");
    rates.forEach((k, v) -> md.append("| ").append(k).append(" | ").append(String.format("%,.0f", median(k)))
        .append(" | ").append(v.stream().map(x -> String.format("%,.0f", x)).toList()).append(" |\n"));
    String[][] ratios = {
        {"dispatcher / store operations (target >= 0.80)", "drain: OutboxDispatcher, claim, throughput mode",
            DRAIN_BASELINE},
        {"ordered / throughput mode (target >= 0.50)", "drain: OutboxDispatcher, claim, ordered mode",
            "drain: OutboxDispatcher, claim, throughput mode"},
        {"hot aggregates: ordered with runs / throughput mode", HOT + "ordered, runs (aggregateRun 100, default)",
            HOT + "throughput mode (baseline)"},
        {"hot aggregates: ordered with runs / heads only", HOT + "ordered, runs (aggregateRun 100, default)",
            HOT + "ordered, heads only (aggregateRun 1)"},
        {"append batch / plain JDBC batch, minimal table (goal >= 0.70, aim 0.80)", APPEND_STORE, APPEND_BASELINE},
        {"append batch without the advisory lock / plain JDBC batch", APPEND_NO_LOCK, APPEND_BASELINE},
        {"plain batch into the shipped schema / minimal table (index cost)", APPEND_SHIPPED, APPEND_BASELINE},
        {"append batch / plain batch into the shipped schema", APPEND_STORE, APPEND_SHIPPED},
        {"append batch with / without the advisory lock", APPEND_STORE, APPEND_NO_LOCK},
        {"single append / plain INSERT (goal: time within 1.10x, rate >= 0.91)", SINGLE_STORE, SINGLE_BASELINE},
        {"single append without the advisory lock / plain INSERT", SINGLE_NO_LOCK, SINGLE_BASELINE}};
    md.append("\n| ratio | value |\n|---|---:|\n");
    for (String[] r : ratios) {
      if (!rates.containsKey(r[1]) || !rates.containsKey(r[2])) {
        continue;
      }
      md.append("| ").append(r[0]).append(" | ").append(String.format("%.2f", median(r[1]) / median(r[2])))
          .append(" |\n");
    }
    notes.forEach(n -> md.append("\n").append(n).append("\n"));
    return md.toString();
  }

  private boolean runs(String group) {
    String only = options.get("only");
    return only == null || List.of(only.split(",")).contains(group);
  }

  private String setting(String name) throws SQLException {
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT current_setting(?)")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    }
  }

  private String settings() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_setting('server_version'), current_setting('synchronous_commit'),"
            + " current_setting('shared_buffers')")) {
      rs.next();
      return "PostgreSQL " + rs.getString(1) + " (synchronous_commit=" + rs.getString(2) + ", shared_buffers="
          + rs.getString(3) + ")";
    }
  }

  static {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
  }

}
