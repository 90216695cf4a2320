package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
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
 *      [--only drain,hot,append,locks,schema,retained,horizon,purge-drain] [--schema-events 200000]
 *      [--retained 2000000] [--purge-rows 1000000] [--purge-pending 100000] [--single-events 5000]
 * </pre>
 *
 * <p>{@code schema} loads the same rows into the schema before the lean indexes, the lean schema and the
 * minimal table, drains them with the store's claim and mark statements, and reports per million rows the
 * insert and mark time and the index size once every row is dispatched. {@code retained} measures claim
 * latency with 10,000 pending rows beside 0 and {@code --retained} dispatched rows, then the purge rate of
 * those rows in bounded batches. {@code purge-drain} ({@link PurgeDrainScenario}; only with {@code --only},
 * being the longest) drains {@code --purge-pending} events beside {@code --purge-rows} dispatched ones, alone
 * and while {@code OutboxMaintenance} purges the dispatched rows.
 *
 * <p>The append baseline is the best hand-written JDBC for the same job: one prepared statement per
 * connection, a batch of 1,000 rows per transaction with the driver's defaults, into a minimal outbox
 * (primary key + the partial claim index), the database clock filling the times. Single-event appends
 * ({@code --single-events}, default 5,000 per round) are compared with a plain single insert into the
 * minimal table and into the shipped schema, so the indexes' share and the library's own share show apart.
 */
public final class PostgresBenchmark {
  private static final int BATCH = BenchSupport.DRAIN_BATCH;
  private static final Duration LEASE = Duration.ofMinutes(1);
  private static final String DRAIN_BASELINE = "drain: store.claim + store.markDispatched, no dispatcher (baseline)";
  private static final int APPEND_BATCH = 1_000;
  private static final String APPEND_BASELINE =
      "append: plain JDBC batch INSERT, minimal table, 1,000 per tx (baseline)";
  private static final String APPEND_SHIPPED = "append: plain JDBC batch INSERT, shipped (lean) schema, 1,000 per tx";
  private static final String APPEND_OLD = "append: plain JDBC batch INSERT, schema before the lean indexes, 1,000 per tx";
  private static final String APPEND_STORE = "append: JdbcOutboxStore.append(c, events), defaults, 1,000 per tx";
  private static final String SINGLE_BASELINE = "append: plain INSERT, minimal table, 1 per tx (baseline)";
  private static final String SINGLE_SHIPPED = "append: plain INSERT, shipped (lean) schema, 1 per tx";
  private static final String SINGLE_STORE = "append: JdbcOutboxStore.append(c, event), defaults, 1 per tx";
  /** Groups that run only when {@code --only} names them: two loads of a million rows per round. */
  private static final List<String> OPT_IN = List.of("purge-drain");
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
    this.dataSource = BenchSupport.postgresPool(options, 4);
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> options = BenchSupport.parse(args);
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
        record(APPEND_OLD, appendBatch(Writer.PLAIN_OLD));
        record(APPEND_STORE, appendBatch(Writer.STORE));
        record(SINGLE_BASELINE, appendSingle(Writer.PLAIN_MINIMAL));
        record(SINGLE_SHIPPED, appendSingle(Writer.PLAIN_SHIPPED));
        record(SINGLE_STORE, appendSingle(Writer.STORE));
      }
    }
    if (runs("schema")) {
      for (int round = 1; round <= rounds; round++) {
        System.err.printf("schema round %d/%d%n", round, rounds);
        for (Schema schema : Schema.values()) {
          schemaCost(schema);
        }
      }
    }
    if (runs("retained")) {
      retained();
    }
    if (runs("purge-drain")) {
      PurgeDrainScenario scenario = new PurgeDrainScenario(dataSource,
          Integer.parseInt(options.getOrDefault("purge-rows", "1000000")),
          Integer.parseInt(options.getOrDefault("purge-pending", "100000")), aggregates);
      scenario.warmUp();
      for (int round = 1; round <= rounds; round++) {
        System.err.printf("purge-drain round %d/%d%n", round, rounds);
        PurgeDrainScenario.Round r = scenario.round(round);
        record(PurgeDrainScenario.ALONE, r.alone().rate());
        record(PurgeDrainScenario.DURING, r.during().drain().rate());
        notes.add(scenario.describe(r));
        System.err.println("  " + notes.get(notes.size() - 1));
      }
    }
    if (runs("horizon")) {
      for (int round = 1; round <= rounds; round++) {
        System.err.printf("horizon round %d/%d%n", round, rounds);
        record(HORIZON_FREE, drainBesideTransaction(false));
        record(HORIZON_HELD, drainBesideTransaction(true));
      }
    }
    if (runs("locks")) {
      int limit = lockLimit();
      notes.add("Aggregates per transaction: one transaction appending distinct aggregates with the default settings "
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
      BenchSupport.insertPending(s, table, "gen_random_uuid()", events, aggregates);
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
      return BenchSupport.checkedRate(done, events, t0);
    } finally {
      BenchSupport.dropOutbox(dataSource, table);
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
      OutboxDispatcher dispatcher = BenchSupport.drainDispatcher(store).preserveAggregateOrder(ordered)
          .aggregateRun(run).build();
      return BenchSupport.drainAll(dispatcher, expected);
    } finally {
      BenchSupport.dropOutbox(dataSource, table);
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
    /** The same into the table as createSchema() made it before the lean indexes. */
    PLAIN_OLD,
    /**
     * JdbcOutboxStore.append with the defaults: the sequence counter, whose row lock serialises an aggregate
     * (on PostgreSQL no advisory lock is taken).
     */
    STORE
  }

  private double appendBatch(Writer writer) throws SQLException {
    return append(newEvents(Math.min(events, 50_000), true), APPEND_BATCH, writer);
  }

  private double appendSingle(Writer writer) throws SQLException {
    return append(newEvents(Integer.parseInt(options.getOrDefault("single-events", "5000")), false), 1, writer);
  }

  private double append(List<OutboxEvent> list, int perTx, Writer writer) throws SQLException {
    String table = "bench_append_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table)
        .build();
    store.createSchema();
    if (writer == Writer.PLAIN_MINIMAL) {
      minimal(table);
    } else if (writer == Writer.PLAIN_OLD) {
      beforeLean(table);
    }
    // what a user would write: the columns the event has, the database clock for the times
    String plain = "INSERT INTO \"" + table + "\" (id, aggregate_type, aggregate_id, topic, payload, headers, priority)"
        + " VALUES (?, ?, ?, ?, CAST(? AS json), CAST(? AS json), ?)";
    boolean viaStore = writer == Writer.STORE;
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
      BenchSupport.dropOutbox(dataSource, table);
    }
  }

  /**
   * Gives a lean table the indexes createSchema() made before the lean schema: the full aggregate index
   * instead of the partial head index, and the partial index on dispatched_at.
   */
  private void beforeLean(String table) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP INDEX IF EXISTS \"" + table + "_head_idx\"");
      s.execute("CREATE INDEX \"" + table + "_aggregate_idx\" ON \"" + table
          + "\" (aggregate_type, aggregate_id, status, created_at, id)");
      s.execute("CREATE INDEX \"" + table + "_dispatched_idx\" ON \"" + table
          + "\" (dispatched_at) WHERE status = 'DISPATCHED'");
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
   * The most distinct aggregates one transaction can append with the default settings before PostgreSQL runs
   * out of lock table space, probed in steps of 500 up to 40,000 (0 = none failed).
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
      BenchSupport.dropOutbox(dataSource, table);
    }
  }

  // ------------------------------------------------------------------ schema cost and retention

  /** The indexes a table carries for the schema scenarios. */
  private enum Schema {
    BEFORE_LEAN("schema before the lean indexes (pkey, claim, full aggregate, dispatched_at, DLQ)"),
    LEAN("lean schema (pkey, claim, live head, DLQ)"),
    MINIMAL("minimal table (pkey, claim)");

    final String label;

    Schema(String label) {
      this.label = label;
    }
  }

  private final Map<Schema, List<double[]>> schemaRuns = new LinkedHashMap<>();

  /**
   * Loads {@code --schema-events} pending rows with one INSERT … SELECT, drains them with the store's claim
   * and mark statements (batches of 500), timing the marks apart, then reads the index size with every row
   * dispatched. Records seconds per 1M rows for insert, claim and mark, and MB per 1M rows of index.
   */
  private void schemaCost(Schema schema) throws SQLException {
    int n = Integer.parseInt(options.getOrDefault("schema-events", "200000"));
    String table = "bench_schema_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      if (schema == Schema.BEFORE_LEAN) {
        beforeLean(table);
      } else if (schema == Schema.MINIMAL) {
        minimal(table);
      }
      long t0 = System.nanoTime();
      BenchSupport.insertPending(s, table, BenchSupport.V7, n, aggregates);
      double insert = (System.nanoTime() - t0) / 1e9;
      s.execute("VACUUM ANALYZE \"" + table + "\"");
      long claimNanos = 0;
      long markNanos = 0;
      int done = 0;
      while (true) {
        long c0 = System.nanoTime();
        List<OutboxEvent> claimed = store.claim("raw#" + done, BATCH, LEASE, false);
        long c1 = System.nanoTime();
        claimNanos += c1 - c0;
        if (claimed.isEmpty()) {
          break;
        }
        done += store.markDispatched(claimed).size();
        markNanos += System.nanoTime() - c1;
      }
      BenchSupport.checkedRate(done, n, System.nanoTime());
      double indexBytes = indexBytes(s, table);
      s.execute("REINDEX TABLE \"" + table + "\"");
      double rebuiltBytes = indexBytes(s, table); // what the indexes hold once vacuum has recycled the dead entries
      double perMillion = 1_000_000.0 / n;
      double[] run = {insert * perMillion, claimNanos / 1e9 * perMillion, markNanos / 1e9 * perMillion,
          indexBytes / 1e6 * perMillion, rebuiltBytes / 1e6 * perMillion, load()};
      schemaRuns.computeIfAbsent(schema, k -> new ArrayList<>()).add(run);
      System.err.printf("  %-40s insert %.1f s, claim %.1f s, mark %.1f s, index %.0f MB, rebuilt %.0f MB per 1M;"
          + " load %.2f%n", schema, run[0], run[1], run[2], run[3], run[4], run[5]);
    } finally {
      BenchSupport.dropOutbox(dataSource, table);
    }
  }

  /**
   * Claim latency with 10,000 pending rows beside 0 and then {@code --retained} dispatched rows (created
   * earlier, as retention leaves them), then the purge of the dispatched rows in bounded batches.
   */
  private void retained() throws SQLException {
    int retained = Integer.parseInt(options.getOrDefault("retained", "2000000"));
    for (int dispatched : new int[] {0, retained}) {
      String table = "bench_retained_" + UUID.randomUUID().toString().substring(0, 8);
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
      store.createSchema();
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        BenchSupport.insertDispatched(s, table, dispatched);
        BenchSupport.insertPending(s, table, BenchSupport.V7, 10_000, 1_000);
        s.execute("VACUUM ANALYZE \"" + table + "\"");
        List<Double> latencies = new ArrayList<>();
        for (boolean ordered : new boolean[] {false, true}) {
          latencies.clear();
          for (int i = 0; i < 50; i++) {
            long t0 = System.nanoTime();
            List<OutboxEvent> claimed = store.claim("lat", 100, LEASE, ordered);
            latencies.add((System.nanoTime() - t0) / 1e6);
            store.release(claimed, Duration.ZERO);
          }
          latencies.sort(null);
          String what = "claim of 100 " + (ordered ? "(ordered)" : "(throughput)") + ", 10,000 pending, "
              + String.format("%,d", dispatched) + " dispatched";
          retainedRows.add(new String[] {what, String.format("%.2f", latencies.get(latencies.size() / 2)),
              String.format("%.2f", latencies.get(latencies.size() * 95 / 100)), String.format("%.2f", load())});
          System.err.printf("  %s: p50 %.2f ms, p95 %.2f ms%n", what, latencies.get(latencies.size() / 2),
              latencies.get(latencies.size() * 95 / 100));
        }
        if (dispatched > 0) {
          io.mic.outbox.jdbc.OutboxMaintenance maintenance = io.mic.outbox.jdbc.OutboxMaintenance.builder().store(store)
              .batchSize(io.mic.outbox.jdbc.OutboxMaintenance.DEFAULT_BATCH_SIZE).build();
          long t0 = System.nanoTime();
          long purged = maintenance.purgeDispatchedOlderThan(java.time.Duration.ofHours(1));
          double secs = (System.nanoTime() - t0) / 1e9;
          notes.add(String.format("Purge of %,d dispatched rows (older than 1 hour) beside 10,000 pending, batches of"
              + " %,d: %.1f s, %,.0f rows/s (load average %.2f).", purged,
              io.mic.outbox.jdbc.OutboxMaintenance.DEFAULT_BATCH_SIZE, secs, purged / secs, load()));
          System.err.println("  " + notes.get(notes.size() - 1));
        }
      } finally {
        BenchSupport.dropOutbox(dataSource, table);
      }
    }
  }

  private final List<String[]> retainedRows = new ArrayList<>();
  private static final String HORIZON_FREE = "horizon: drain, claim + throughput (baseline)";
  private static final String HORIZON_HELD = "horizon: the same drain while another session holds a snapshot";

  /**
   * Drains the backlog with the dispatcher (claim, throughput mode), with or without another session holding
   * a REPEATABLE READ snapshot taken before the drain began (the xmin horizon held back), and notes the dead
   * row versions left and the age OutboxMaintenance reports.
   */
  private double drainBesideTransaction(boolean held) throws SQLException {
    String table = loadBacklog();
    try (Connection holder = dataSource.getConnection()) {
      if (held) {
        holder.setAutoCommit(false);
        holder.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        try (Statement s = holder.createStatement()) {
          s.executeQuery("SELECT count(*) FROM \"" + table + "\"").close();
        }
      }
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
      double rate = BenchSupport.drainAll(BenchSupport.drainDispatcher(store).build(), events);
      java.util.Optional<java.time.Duration> age = io.mic.outbox.jdbc.OutboxMaintenance.builder().store(store).build()
          .oldestTransactionAge();
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("VACUUM \"" + table + "\"");
        try (ResultSet rs = s.executeQuery("SELECT n_dead_tup, pg_indexes_size(relid) FROM pg_stat_user_tables"
            + " WHERE relname = '" + table + "'")) {
          rs.next();
          notes.add(String.format("Drain of %,d events %s: %,.0f events/s; after a VACUUM %,d dead row versions"
              + " remain and the indexes take %.1f MB; oldestTransactionAge() read %s (load average %.2f).",
              events, held ? "while another session held a snapshot" : "with no transaction held open", rate,
              rs.getLong(1), rs.getLong(2) / 1e6, age.map(Object::toString).orElse("empty"), load()));
        }
      }
      if (held) {
        holder.rollback();
      }
      return rate;
    } finally {
      BenchSupport.dropOutbox(dataSource, table);
    }
  }

  private static double indexBytes(Statement s, String table) throws SQLException {
    try (ResultSet rs = s.executeQuery("SELECT pg_indexes_size('\"" + table + "\"')")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** The one-minute load average of the machine, as uptime shows it. */
  private static double load() {
    return java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
  }

  // ------------------------------------------------------------------ reporting

  private void record(String scenario, double rate) {
    rates.computeIfAbsent(scenario, k -> new ArrayList<>()).add(rate);
    System.err.printf("  %-60s %,10.0f events/s%n", scenario, rate);
  }

  private double median(String scenario) {
    return BenchSupport.median(rates.get(scenario));
  }

  private String report() throws SQLException {
    StringBuilder md = new StringBuilder();
    md.append("# PostgreSQL benchmark\n\n");
    md.append("Run ").append(Instant.now()).append(" on ").append(Runtime.getRuntime().availableProcessors())
        .append(" cores, Java ").append(System.getProperty("java.version")).append(", ").append(settings())
        .append(".\nBacklog: ").append(events).append(" events over ").append(aggregates)
        .append(" aggregates, batch ").append(BATCH).append(", no-op publisher, one dispatcher thread.")
        .append(" Load average (1 min) at the end: ").append(String.format("%.2f", load())).append(".\n\n");
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
        {"plain batch into the shipped schema / minimal table (index cost)", APPEND_SHIPPED, APPEND_BASELINE},
        {"append batch / plain batch into the shipped schema", APPEND_STORE, APPEND_SHIPPED},
        {"plain batch into the schema before the lean indexes / minimal table", APPEND_OLD, APPEND_BASELINE},
        {"plain batch: lean / before the lean indexes", APPEND_SHIPPED, APPEND_OLD},
        {"drain while a snapshot is held / without", HORIZON_HELD, HORIZON_FREE},
        {"drain during a purge / drain alone", PurgeDrainScenario.DURING, PurgeDrainScenario.ALONE},
        {"single append / plain INSERT (goal: time within 1.10x, rate >= 0.91)", SINGLE_STORE, SINGLE_BASELINE},
        {"plain single INSERT into the shipped schema / minimal table (index cost)", SINGLE_SHIPPED, SINGLE_BASELINE},
        {"single append / plain INSERT into the shipped schema (the library's own cost)", SINGLE_STORE,
            SINGLE_SHIPPED}};
    // under a drifting machine load, the ratio of the same round (the two scenarios ran seconds apart) is
    // steadier than the ratio of two medians taken from different rounds
    md.append("\n| ratio | of the medians | median of the per-round ratios | per round |\n|---|---:|---:|---|\n");
    for (String[] r : ratios) {
      if (!rates.containsKey(r[1]) || !rates.containsKey(r[2])) {
        continue;
      }
      List<Double> a = rates.get(r[1]);
      List<Double> b = rates.get(r[2]);
      List<Double> paired = new ArrayList<>();
      for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
        paired.add(a.get(i) / b.get(i));
      }
      List<String> shown = paired.stream().map(x -> String.format("%.2f", x)).toList();
      paired.sort(null);
      double mid = paired.size() % 2 == 1 ? paired.get(paired.size() / 2)
          : (paired.get(paired.size() / 2 - 1) + paired.get(paired.size() / 2)) / 2;
      md.append("| ").append(r[0]).append(" | ").append(String.format("%.2f", median(r[1]) / median(r[2])))
          .append(" | ").append(String.format("%.2f", mid)).append(" | ").append(shown).append(" |\n");
    }
    if (!schemaRuns.isEmpty()) {
      md.append("\nPer 1M rows (").append(options.getOrDefault("schema-events", "200000"))
          .append(" loaded with one INSERT … SELECT, drained by the store's claim + mark statements in batches of ")
          .append(BATCH).append("; medians of the rounds; index size with every row dispatched):\n\n")
          .append("| schema | insert s | claim s | mark s | index MB after the drain | index MB rebuilt (what it holds) | load avg |\n|---|---:|---:|---:|---:|---:|---:|\n");
      schemaRuns.forEach((schema, runs) -> {
        md.append("| ").append(schema.label);
        for (int k = 0; k < 6; k++) {
          List<Double> v = new ArrayList<>();
          for (double[] r : runs) {
            v.add(r[k]);
          }
          v.sort(null);
          md.append(" | ").append(String.format(k == 5 ? "%.2f" : "%.1f", v.get(v.size() / 2)));
        }
        md.append(" |\n");
      });
    }
    if (!retainedRows.isEmpty()) {
      md.append("\n| claim latency | p50 ms | p95 ms | load avg |\n|---|---:|---:|---:|\n");
      retainedRows.forEach(r -> md.append("| ").append(String.join(" | ", r)).append(" |\n"));
    }
    notes.forEach(n -> md.append("\n").append(n).append("\n"));
    return md.toString();
  }

  /** Without {@code --only}, every group but {@link #OPT_IN}'s; with it, the groups it names. */
  private boolean runs(String group) {
    String only = options.get("only");
    return only == null ? !OPT_IN.contains(group) : List.of(only.split(",")).contains(group);
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
