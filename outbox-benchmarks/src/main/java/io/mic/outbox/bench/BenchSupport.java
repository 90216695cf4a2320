package io.mic.outbox.bench;

import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * What the benchmark mains share: {@code --option value} arguments, the report file, the machine's state,
 * and the PostgreSQL rows and drain the scenarios start from.
 */
final class BenchSupport {
  /** The batch of the drain scenarios. */
  static final int DRAIN_BATCH = 500;
  /** A time-ordered id like the store's UUIDv7 (the milliseconds, version 7, then the row number). */
  static final String V7 = "CAST(lpad(to_hex(CAST(extract(epoch FROM clock_timestamp()) * 1000 AS bigint)), 12,"
      + " '0') || '7' || lpad(to_hex(g), 19, '0') AS uuid)";

  private BenchSupport() {}

  static Map<String, String> parse(String[] args) {
    Map<String, String> options = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i += 2) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("expected --option value, got " + args[i]);
      }
      options.put(args[i].substring(2), args[i + 1]);
    }
    return options;
  }

  /**
   * A NATS connection for a raw client and the library's publisher alike, with the option the publisher's own
   * connection has ({@code dontForceFlushOnRequest}: a batch's messages share writes), so neither side of a
   * comparison is slowed by the client's default of one write per request.
   */
  static io.nats.client.Connection nats(String url, String name) throws IOException, InterruptedException {
    return io.nats.client.Nats.connect(io.nats.client.Options.builder().server(url).connectionName(name)
        .dontForceFlushOnRequest().build());
  }

  /** The PostgreSQL URL of {@code --url}, by default the local server's {@code test} database. */
  static String postgresUrl(Map<String, String> options) {
    return options.getOrDefault("url", "jdbc:postgresql://127.0.0.1:5432/test");
  }

  /** A pool of {@code size} connections to {@link #postgresUrl} as {@code --user} / {@code --password}. */
  static HikariDataSource postgresPool(Map<String, String> options, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(postgresUrl(options));
    config.setUsername(options.getOrDefault("user", "postgres"));
    config.setPassword(options.getOrDefault("password", ""));
    config.setMaximumPoolSize(size);
    return new HikariDataSource(config);
  }

  /** The middle value (the upper one of the two middle values of an even count); the list is left as it is. */
  static double median(List<Double> values) {
    List<Double> sorted = new ArrayList<>(values);
    sorted.sort(null);
    return sorted.get(sorted.size() / 2);
  }

  /** The nearest-rank {@code q}-quantile of an ascending, non-empty list, e.g. {@code 0.99} for p99. */
  static double percentile(List<Double> sorted, double q) {
    return sorted.get(Math.min(sorted.size() - 1, Math.max(0, (int) Math.ceil(q * sorted.size()) - 1)));
  }

  /** Writes the report, creating the directory; says where on stderr. */
  static void write(Path out, String report) throws IOException {
    if (out.toAbsolutePath().getParent() != null) {
      Files.createDirectories(out.toAbsolutePath().getParent());
    }
    Files.writeString(out, report);
    System.err.println("written to " + out.toAbsolutePath());
  }

  /** The 1, 5 and 15 minute load averages (Linux), e.g. {@code 2.31 1.80 1.02}; "n/a" elsewhere. */
  static String loadAverage() {
    try {
      String[] parts = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return parts[0] + " " + parts[1] + " " + parts[2];
    } catch (IOException | RuntimeException e) {
      return "n/a";
    }
  }

  /** A backlog of {@code count} events: distinct aggregates, small payloads, as the library would send them. */
  static List<OutboxEvent> orders(int count, String topic) {
    List<OutboxEvent> list = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      list.add(OutboxEvent.builder().aggregate("order", "o-" + i).topic(topic)
          .payload("{\"order\":" + i + ",\"status\":\"created\",\"total\":12.5}").build());
    }
    return list;
  }

  /**
   * Appends {@code events} through {@code store}, one transaction per 1,000 (each takes 1,000 aggregate locks),
   * then runs {@code VACUUM ANALYZE} on {@code table}, so that reads start on fresh statistics.
   */
  static void appendBacklog(DataSource ds, JdbcOutboxStore store, String table, List<OutboxEvent> events)
      throws SQLException {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      for (int i = 0; i < events.size(); i += 1_000) {
        store.append(c, events.subList(i, Math.min(events.size(), i + 1_000)));
        c.commit();
      }
    }
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute("VACUUM ANALYZE \"" + table + "\"");
    }
  }

  /** Drops a benchmark's PostgreSQL outbox table and the tables beside it (sequences, locks, control). */
  static void dropOutbox(DataSource ds, String table) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      for (String suffix : new String[] {"", "_sequences", "_locks", "_control", "_claims"}) {
        s.execute("DROP TABLE IF EXISTS \"" + table + suffix + "\"");
      }
    }
  }

  /**
   * Inserts {@code n} PENDING rows due now over {@code aggregates} aggregates with one INSERT … SELECT; {@code id}
   * is the SQL giving row {@code g} its id ({@link #V7}, time-ordered as the store's, or {@code gen_random_uuid()}).
   */
  static void insertPending(Statement s, String table, String id, int n, int aggregates) throws SQLException {
    s.execute("INSERT INTO \"" + table + "\" (id, aggregate_type, aggregate_id, topic, payload, headers, priority,"
        + " created_at, next_attempt_at) SELECT " + id + ", 'order', 'agg-' || (g % " + aggregates + "),"
        + " 'order.changed', json_build_object('order', g % " + aggregates + ", 'n', g, 'note', 'benchmark'),"
        + " '{}', 0, clock_timestamp(), clock_timestamp() FROM generate_series(1, " + n + ") AS g");
  }

  /**
   * Inserts {@code n} DISPATCHED rows as retention leaves them: created two days ago, one every 50 µs,
   * dispatched a second later, their {@link #V7} ids ahead of any row inserted after them, so a purge by
   * primary key meets them first.
   */
  static void insertDispatched(Statement s, String table, int n) throws SQLException {
    s.execute("INSERT INTO \"" + table + "\" (id, aggregate_type, aggregate_id, topic, payload, headers,"
        + " priority, status, lease_owner, created_at, next_attempt_at, dispatched_at) SELECT " + V7 + ","
        + " 'order', 'agg-' || (g % 10000), 'order.changed', json_build_object('n', g), '{}', 0, 'DISPATCHED',"
        + " 'w', t, t, t + interval '1 second' FROM (SELECT g, now() - interval '2 days' + g * interval '50"
        + " microseconds' AS t FROM generate_series(1, " + n + ") AS g) AS x");
  }

  /** The drain scenarios' dispatcher: claim mode, batches of {@link #DRAIN_BATCH}, a publisher that does nothing. */
  static OutboxDispatcher.Builder drainDispatcher(OutboxStore store) {
    return OutboxDispatcher.builder().store(store).dispatchFn(e -> {}).useClaim(true).batchSize(DRAIN_BATCH);
  }

  /** Dispatches until a pass finds nothing due; returns events/s, and fails unless {@code expected} went. */
  static double drainAll(OutboxDispatcher dispatcher, int expected) {
    long t0 = System.nanoTime();
    int done = 0;
    int n;
    while ((n = dispatcher.dispatchOnce().dispatched()) > 0) {
      done += n;
    }
    return checkedRate(done, expected, t0);
  }

  /** {@code done} per second since {@code t0}; throws unless {@code done} is what was {@code expected}. */
  static double checkedRate(int done, int expected, long t0) {
    double rate = done / ((System.nanoTime() - t0) / 1e9);
    if (done != expected) {
      throw new IllegalStateException("drained " + done + " of " + expected + " events");
    }
    return rate;
  }

  static String postgresSettings(DataSource ds) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_setting('server_version'), current_setting('synchronous_commit'),"
            + " current_setting('shared_buffers')")) {
      rs.next();
      return "PostgreSQL " + rs.getString(1) + " (synchronous_commit=" + rs.getString(2) + ", shared_buffers="
          + rs.getString(3) + ")";
    }
  }
}
