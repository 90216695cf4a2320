package io.mic.outbox.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The partitions of a PostgreSQL outbox table partitioned by range of {@code created_at}
 * ({@link JdbcOutboxStore.Builder#partitionInterval}). Three kinds, all plain range partitions (no
 * {@code DEFAULT} partition, see docs/jdbc.md):
 * <ul>
 *   <li>{@code <table>_p<yyyyMMdd_HHmm>}: one interval each, aligned on the epoch in UTC, named after its start;
 *   <li>{@code <table>_past}: from {@code MINVALUE} to the first of them (the rows of a table converted by
 *       {@code createSchema()}, or none);
 *   <li>{@code <table>_future}: from the last of them to {@code MAXVALUE}, so an append never fails for lack of a
 *       partition; {@link #ensure()} moves the rows it caught into the partitions it creates.
 * </ul>
 * Partition DDL locks the whole table for an instant: it waits at most {@value #LOCK_TIMEOUT} for a lock and
 * fails otherwise, rather than queue every append behind a long transaction.
 */
final class PostgresPartitions {
  static final String RESOURCE = "io/mic/outbox/jdbc/schema/postgresql-partitioned.sql";
  /** Partitions kept ahead of the current one. */
  static final int AHEAD = 3;
  static final Duration MIN_INTERVAL = Duration.ofHours(1);
  private static final String LOCK_TIMEOUT = "2s";
  private static final Duration MAX_CHECK_EVERY = Duration.ofMinutes(10);
  private static final DateTimeFormatter NAME = DateTimeFormatter.ofPattern("'p'yyyyMMdd'_'HHmm")
      .withZone(ZoneOffset.UTC);
  private static final Logger LOG = LoggerFactory.getLogger(PostgresPartitions.class);

  private final TableAccess access;
  private final long intervalSeconds;
  private final long checkEveryNanos;
  private volatile long nextCheck = System.nanoTime();

  PostgresPartitions(TableAccess access, Duration interval) {
    this.access = access;
    this.intervalSeconds = interval.toSeconds();
    this.checkEveryNanos = Math.min(interval.dividedBy(4).toNanos(), MAX_CHECK_EVERY.toNanos());
  }

  /** One partition; {@code lower} null: from {@code MINVALUE}, {@code upper} null: to {@code MAXVALUE}. */
  record Partition(String name, Instant lower, Instant upper) {}

  /** {@code 'p'}: partitioned; {@code 'r'}: a plain table; null: none. */
  String kind() {
    return access.inTransaction(c -> {
      Sql kind = Sql.of("SELECT relkind FROM pg_class WHERE oid = to_regclass(?)", access.table);
      try (PreparedStatement ps = kind.prepare(c, access.dialect); ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    });
  }

  /** The partitions, oldest first. */
  List<Partition> list() {
    return access.inTransaction(this::list);
  }

  private List<Partition> list(Connection c) throws SQLException {
    List<Partition> found = new ArrayList<>();
    Sql partitions = Sql.of("SELECT c.relname,"
        + " CAST(substring(b.e from 'FROM \\(''([^'']+)''\\)') AS timestamptz),"
        + " CAST(substring(b.e from 'TO \\(''([^'']+)''\\)') AS timestamptz)"
        + " FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
        + " CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS e) AS b"
        + " WHERE i.inhparent = to_regclass(?)", access.table);
    try (PreparedStatement ps = partitions.prepare(c, access.dialect); ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        found.add(new Partition(rs.getString(1), instant(rs, 2), instant(rs, 3)));
      }
    }
    found.sort(Comparator.comparing(Partition::lower, Comparator.nullsFirst(Comparator.naturalOrder())));
    return found;
  }

  private static Instant instant(ResultSet rs, int column) throws SQLException {
    java.sql.Timestamp t = rs.getTimestamp(column);
    return t == null ? null : t.toInstant();
  }

  /**
   * Creates the partitions from the current interval to {@value #AHEAD} ahead that are missing, and the
   * {@code past} and {@code future} ones; concurrent callers wait for each other (an advisory lock), and when
   * every partition exists no DDL runs.
   *
   * @return how many bounded partitions were created (the {@code future} one, made again, is not counted)
   */
  int ensure() {
    return access.inTransaction(c -> {
      if (plan(c, list(c)).isEmpty()) {
        return 0;
      }
      lock(c);
      List<Partition> partitions = list(c); // another caller may have created them meanwhile
      List<String> ddl = plan(c, partitions);
      for (String statement : ddl) {
        execute(c, statement);
      }
      return (int) ddl.stream().filter(s -> s.startsWith("CREATE TABLE") && !s.endsWith("(MAXVALUE)")).count();
    });
  }

  /** {@link #ensure()} at most once every quarter interval (at most every 10 minutes); a failure is logged. */
  void keepAhead() {
    long now = System.nanoTime();
    if (now - nextCheck < 0) {
      return;
    }
    nextCheck = now + checkEveryNanos;
    try {
      ensure();
    } catch (OutboxStoreException e) {
      LOG.warn("outbox table {}: cannot create the partitions ahead, tried again in {} s (appends go to the"
          + " future partition meanwhile): {}", access.name, checkEveryNanos / 1_000_000_000L, e.getMessage());
    }
  }

  /** The DDL that brings the partitions up to {@value #AHEAD} ahead of now; empty when none is missing. */
  private List<String> plan(Connection c, List<Partition> partitions) throws SQLException {
    Instant base = floor(now(c));
    Instant end = base.plusSeconds(intervalSeconds * (AHEAD + 1));
    Partition future = partitions.stream().filter(p -> p.upper() == null).findFirst().orElse(null);
    Instant horizon = partitions.stream().map(Partition::upper).filter(Objects::nonNull)
        .max(Comparator.naturalOrder()).orElse(null);
    List<String> ddl = new ArrayList<>();
    if (horizon == null) { // a new table
      ddl.add(create("past", null, base));
      horizon = base;
    }
    if (!horizon.isBefore(end) && future != null) {
      return ddl;
    }
    String moving = access.name.derivedName("future_moving");
    if (future != null) {
      ddl.add("ALTER TABLE " + access.table + " DETACH PARTITION " + sibling(future.name()));
      ddl.add("ALTER TABLE " + sibling(future.name()) + " RENAME TO \"" + moving + "\"");
    }
    for (Instant t = horizon; t.isBefore(end); ) {
      Instant u = t.isBefore(base) ? base : floor(t).plusSeconds(intervalSeconds);
      ddl.add(create(NAME.format(t), t, u));
      t = u;
    }
    ddl.add(create("future", horizon.isBefore(end) ? end : horizon, null));
    if (future != null) {
      ddl.add("INSERT INTO " + access.table + " SELECT * FROM " + sibling(moving));
      ddl.add("DROP TABLE " + sibling(moving));
    }
    return ddl;
  }

  private String create(String suffix, Instant from, Instant to) {
    return "CREATE TABLE " + access.name.sibling(suffix, '"') + " PARTITION OF " + access.table
        + " FOR VALUES FROM (" + bound(from, "MINVALUE") + ") TO (" + bound(to, "MAXVALUE") + ")";
  }

  private static String bound(Instant t, String unbounded) {
    return t == null ? unbounded : "'" + t + "'"; // an Instant's ISO-8601 text: digits, '-', ':', 'T', 'Z'
  }

  /**
   * Drops every partition whose rows were all created more than {@code retention} ago and that holds no
   * {@code PENDING}, {@code PROCESSING} or {@code DLQ} row: detached first, which locks the table, then checked
   * again and dropped in the same transaction. A partition whose lock cannot be had is left for the next run.
   */
  int dropOlderThan(Duration retention) {
    long micros = TableAccess.retentionMicros(retention);
    Instant cutoff = access.inTransaction(PostgresPartitions::now).minusNanos(micros * 1_000);
    int dropped = 0;
    for (Partition p : list()) {
      if (p.upper() == null || p.upper().isAfter(cutoff) || holdsLiveRows(p)) {
        continue;
      }
      try {
        if (drop(p)) {
          dropped++;
        }
      } catch (OutboxStoreException e) {
        LOG.warn("outbox table {}: partition {} not dropped, tried again at the next call: {}", access.name,
            p.name(), e.getMessage());
      }
    }
    if (dropped > 0) {
      LOG.info("outbox table {}: dropped {} partition(s) created more than {} ago", access.name, dropped, retention);
    }
    return dropped;
  }

  private boolean holdsLiveRows(Partition p) {
    return access.inTransaction(c -> holdsLiveRows(c, p));
  }

  /** Both probes read a partial index of the partition (claim and dead letters), never its dispatched rows. */
  private boolean holdsLiveRows(Connection c, Partition p) throws SQLException {
    String table = sibling(p.name());
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT EXISTS (SELECT 1 FROM " + table
        + " WHERE status IN ('PENDING', 'PROCESSING')) OR EXISTS (SELECT 1 FROM " + table
        + " WHERE status = 'DLQ')")) {
      rs.next();
      return rs.getBoolean(1);
    }
  }

  private boolean drop(Partition p) {
    return access.inTransaction(c -> {
      setLockTimeout(c);
      execute(c, "ALTER TABLE " + access.table + " DETACH PARTITION " + sibling(p.name()));
      if (holdsLiveRows(c, p)) { // a row came back to life before the lock: keep the partition
        c.rollback();
        return false;
      }
      execute(c, "DROP TABLE " + sibling(p.name()));
      return true;
    });
  }

  /**
   * Turns the plain table into the {@code past} partition of a new partitioned table of its name, in one
   * transaction that holds the table's lock throughout: its rows stay where they are (no copy), and the check
   * of the partition's bound reads them once. Runs after the table's other upgrades.
   */
  void convert() {
    access.inTransaction(c -> {
      setLockTimeout(c);
      execute(c, "LOCK TABLE " + access.table + " IN ACCESS EXCLUSIVE MODE");
      Instant boundary = floor(now(c)).plusSeconds(intervalSeconds);
      String past = access.name.derivedName("past");
      execute(c, "ALTER TABLE " + access.table + " RENAME TO \"" + past + "\"");
      // the key of a partitioned table holds created_at: attaching builds the partition's (id, created_at)
      execute(c, "ALTER TABLE " + sibling(past) + " DROP CONSTRAINT \"" + constraint(c, sibling(past), "p") + "\"");
      for (String index : List.of("claim_idx", "head_idx", "dlq_idx", "held_idx", "parked_idx")) {
        execute(c, "ALTER INDEX IF EXISTS " + access.name.sibling(index, '"') + " RENAME TO \""
            + access.name.derivedName("past_" + index) + "\"");
      }
      String check = constraint(c, sibling(past), "c");
      for (String statement : TableAccess.statements(access.ddl(RESOURCE, JdbcOutboxStore.DEFAULT_TABLE))) {
        execute(c, statement);
      }
      // a partition needs its table's CHECK constraints by name; the new table's was named around the old one
      execute(c, "ALTER TABLE " + sibling(past) + " RENAME CONSTRAINT \"" + check + "\" TO \""
          + constraint(c, access.table, "c") + "\"");
      execute(c, "ALTER TABLE " + access.table + " ATTACH PARTITION " + sibling(past)
          + " FOR VALUES FROM (MINVALUE) TO (" + bound(boundary, null) + ")");
      return null;
    });
    LOG.info("outbox table {}: converted to a table partitioned by created_at; its rows are in partition {}",
        access.name, access.name.derivedName("past"));
  }

  /** The table's constraint of {@code type}: its primary key ({@code p}), the CHECK of its status ({@code c}). */
  private static String constraint(Connection c, String table, String type) throws SQLException {
    Sql named = Sql.of("SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(?) AND contype ="
        + " CAST(? AS \"char\")", table, type);
    try (PreparedStatement ps = named.prepare(c, Dialect.POSTGRESQL); ResultSet rs = ps.executeQuery()) {
      if (!rs.next()) {
        throw new SQLException("outbox table " + table + " has no constraint of type " + type, "42704");
      }
      return rs.getString(1);
    }
  }

  /**
   * The doctor's {@code partitions} check: a partition covers the present, at least one is ahead of it, and the
   * {@code future} partition holds no row. Reads the catalog only, so any interval may be given to build this.
   */
  OutboxDoctor.Check check() {
    String name = "partitions";
    if (!"p".equals(kind())) {
      return OutboxDoctor.Check.notApplicable(name, "the table is not partitioned (partitionInterval)");
    }
    return access.inTransaction(c -> {
      Instant now = now(c);
      List<Partition> partitions = list(c);
      Partition future = partitions.stream().filter(p -> p.upper() == null).findFirst().orElse(null);
      long ahead = partitions.stream().filter(p -> p.lower() != null && p.upper() != null && p.lower().isAfter(now))
          .count();
      boolean covered = partitions.stream().anyMatch(p -> p.upper() != null && p.upper().isAfter(now)
          && (p.lower() == null || !p.lower().isAfter(now)));
      String remedy = "run OutboxMaintenance.ensurePartitions(); the dispatchers of a store built with"
          + " partitionInterval do it every quarter interval: are they running?";
      if (!covered || (future != null && holdsRows(c, future))) {
        return OutboxDoctor.Check.warn(name, "no partition covers the present: appends go to " + (future == null
            ? "no partition" : future.name()), remedy);
      }
      if (ahead == 0) {
        return OutboxDoctor.Check.warn(name, "no partition ahead of the current one", remedy);
      }
      return OutboxDoctor.Check.pass(name, partitions.size() + " partition(s), " + ahead
          + " ahead of the current one");
    });
  }

  private boolean holdsRows(Connection c, Partition p) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT EXISTS (SELECT 1 FROM "
        + sibling(p.name()) + ")")) {
      rs.next();
      return rs.getBoolean(1);
    }
  }

  private Instant floor(Instant t) {
    return Instant.ofEpochSecond(Math.floorDiv(t.getEpochSecond(), intervalSeconds) * intervalSeconds);
  }

  /** A partition's name as the catalog gives it, quoted (a partition attached by hand may hold a quote). */
  private String sibling(String partition) {
    String quoted = "\"" + partition.replace("\"", "\"\"") + "\"";
    return access.name.schema() == null ? quoted : "\"" + access.name.schema() + "\"." + quoted;
  }

  private void lock(Connection c) throws SQLException {
    setLockTimeout(c);
    Sql lock = Sql.of("SELECT pg_advisory_xact_lock(hashtext(?))", "mic-outbox partitions " + access.table);
    try (PreparedStatement ps = lock.prepare(c, access.dialect)) {
      ps.execute();
    }
  }

  private static void setLockTimeout(Connection c) throws SQLException {
    execute(c, "SET LOCAL lock_timeout = '" + LOCK_TIMEOUT + "'");
  }

  private static Instant now(Connection c) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT clock_timestamp()")) {
      rs.next();
      return rs.getTimestamp(1).toInstant();
    }
  }

  private static void execute(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
