package io.mic.outbox.jdbc;

import io.mic.outbox.DuplicateEventException;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.internal.UuidV7;
import io.mic.outbox.jdbc.internal.HeadersJson;
import io.mic.outbox.jdbc.internal.Runs;
import io.mic.outbox.jdbc.internal.TableName;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outbox in a SQL table. Appends join the caller's transaction; the dispatcher's reads and marks use
 * short auto-commit statements on connections of the {@link DataSource}.
 *
 * <pre>{@code
 * JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).build();
 * store.createSchema();
 * try (Connection c = dataSource.getConnection()) {
 *   c.setAutoCommit(false);
 *   insertOrder(c, order);                         // the business change
 *   store.append(c, OutboxEvent.builder()          // the event, in the same transaction
 *       .aggregate("order", order.id()).topic("order.created").payload(order.json()).build());
 *   c.commit();
 * }
 * }</pre>
 *
 * <p>Times ({@code created_at}, {@code next_attempt_at}, leases) come from the database clock, never the
 * JVM's. By default an append takes a transaction-scoped lock on the event's aggregate
 * ({@link Builder#lockAggregateOnAppend(boolean)}), so two transactions writing the same aggregate get
 * {@code created_at} in commit order and ordered mode can never publish them the wrong way round.
 */
public final class JdbcOutboxStore implements OutboxStore {
  public static final String DEFAULT_TABLE = "outbox";

  private static final Logger LOG = LoggerFactory.getLogger(JdbcOutboxStore.class);
  private static final Comparator<OutboxEvent> DISPATCH_ORDER = Comparator
      .comparingInt((OutboxEvent e) -> -e.priority())
      .thenComparing(OutboxEvent::createdAt)
      .thenComparing(OutboxEvent::id, UuidV7.ORDER);

  private final DataSource dataSource;
  private final Dialect dialect;
  private final TableName tableName;
  private final String table;
  private final boolean lockAggregateOnAppend;

  private JdbcOutboxStore(Builder b, Dialect dialect) {
    this.dataSource = b.dataSource;
    this.dialect = dialect;
    this.tableName = b.tableName;
    this.table = tableName.quoted(dialect.identifierQuote());
    this.lockAggregateOnAppend = b.lockAggregateOnAppend;
  }

  public static Builder builder() {
    return new Builder();
  }

  public Dialect dialect() {
    return dialect;
  }

  /** The validated table name, as configured. */
  public String table() {
    return tableName.toString();
  }

  /** Creates the table and its indexes if they are missing. Safe to call at every start. */
  public void createSchema() {
    String ddl = schemaDdl();
    inAutoCommit(c -> {
      try (Statement s = c.createStatement()) {
        for (String statement : ddl.split(";\\s*(?:\\n|$)")) {
          if (!statement.isBlank()) {
            s.execute(statement);
          }
        }
      }
      return null;
    });
    LOG.info("outbox table {} ready ({})", tableName, dialect.name());
  }

  /** The DDL of {@link Dialect#schemaResource()} for this store's table name, comments removed. */
  public String schemaDdl() {
    String resource = dialect.schemaResource();
    try (InputStream in = JdbcOutboxStore.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new OutboxException("schema resource " + resource + " is missing from the classpath");
      }
      String ddl = new String(in.readAllBytes(), StandardCharsets.UTF_8).replaceAll("(?m)--.*$", "");
      // the resource names the default table "outbox" and its indexes "outbox_<name>_idx"
      Matcher m = Pattern.compile("\\boutbox(_\\w+_idx)?\\b").matcher(ddl);
      StringBuilder out = new StringBuilder();
      while (m.find()) {
        String name = m.group(1) == null ? table
            : tableName.derived(m.group(1).substring(1), dialect.identifierQuote());
        m.appendReplacement(out, Matcher.quoteReplacement(name));
      }
      return m.appendTail(out).toString();
    } catch (IOException e) {
      throw new OutboxException("cannot read schema resource " + resource, e);
    }
  }

  /**
   * Appends one event inside the caller's transaction. Never commits, rolls back or closes the connection.
   *
   * @throws OutboxException if the connection is in auto-commit mode: the event would then be committed
   *     apart from the business change, which defeats the outbox
   * @throws DuplicateEventException if an event with this id exists (the transaction must roll back)
   */
  public void append(Connection connection, OutboxEvent event) {
    Objects.requireNonNull(event, "event");
    requireTransaction(connection);
    try (PreparedStatement ps = connection.prepareStatement(
        lockAggregateOnAppend ? dialect.insertLocked(table) : dialect.insert(table))) {
      bindInsert(ps, event);
      if (lockAggregateOnAppend) {
        ps.setString(8, lockKey(event));
      }
      ps.executeUpdate();
    } catch (SQLException e) {
      throw appendFailed(e, List.of(event));
    }
  }

  /**
   * Appends events inside the caller's transaction with one JDBC batch, in the order given (which is
   * their order within an aggregate). Never commits, rolls back or closes the connection.
   */
  public void append(Connection connection, Collection<OutboxEvent> events) {
    Objects.requireNonNull(events, "events");
    requireTransaction(connection);
    if (events.isEmpty()) {
      return;
    }
    try {
      if (lockAggregateOnAppend) {
        try (PreparedStatement lock = connection.prepareStatement(dialect.lockAggregates())) {
          lock.setArray(1, connection.createArrayOf("text",
              events.stream().map(JdbcOutboxStore::lockKey).distinct().toArray()));
          lock.execute();
        }
      }
      try (PreparedStatement ps = connection.prepareStatement(dialect.insert(table))) {
        for (OutboxEvent e : events) {
          bindInsert(ps, e);
          ps.addBatch();
        }
        ps.executeBatch();
      }
    } catch (SQLException e) {
      throw appendFailed(e, events);
    }
  }

  @Override
  public List<OutboxEvent> fetchPending(int limit, boolean preserveAggregateOrder) {
    return inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(dialect.fetchPending(table, preserveAggregateOrder))) {
        ps.setInt(1, limit);
        return readAll(ps);
      }
    });
  }

  @Override
  public List<OutboxEvent> claim(String owner, int limit, Duration leaseTtl, boolean preserveAggregateOrder) {
    Objects.requireNonNull(owner, "owner");
    List<OutboxEvent> claimed = inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(dialect.claim(table, preserveAggregateOrder))) {
        ps.setInt(1, limit);
        ps.setString(2, owner);
        ps.setLong(3, micros(leaseTtl));
        return readAll(ps);
      }
    });
    claimed.sort(DISPATCH_ORDER); // RETURNING has no order of its own
    return claimed;
  }

  @Override
  public List<OutboxEvent> claimRuns(String owner, int limit, Duration leaseTtl, int maxRun) {
    Objects.requireNonNull(owner, "owner");
    if (maxRun <= 1) {
      return claim(owner, limit, leaseTtl, true);
    }
    List<OutboxEvent> claimed = inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(dialect.claimRuns(table))) {
        ps.setInt(1, limit);
        ps.setInt(2, maxRun - 1);
        ps.setInt(3, limit);
        ps.setString(4, owner);
        ps.setLong(5, micros(leaseTtl));
        return readAll(ps);
      }
    });
    return Runs.inWaves(claimed);
  }

  @Override
  public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
    Set<UUID> marked = new HashSet<>();
    byLease(events).forEach((owner, group) -> marked.addAll(ids(
        owner == null ? dialect.markDispatchedUnclaimed(table) : dialect.markDispatchedClaimed(table),
        ps -> {
          ps.setArray(1, ps.getConnection().createArrayOf("uuid", idArray(group)));
          if (owner != null) {
            ps.setString(2, owner);
          }
        })));
    return marked;
  }

  @Override
  public boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
    boolean claimed = event.leaseOwner() != null;
    return update(dialect.scheduleRetry(table, claimed), ps -> {
      ps.setLong(1, micros(delay));
      ps.setString(2, error);
      ps.setObject(3, event.id());
      if (claimed) {
        ps.setString(4, event.leaseOwner());
      }
    }) == 1;
  }

  @Override
  public boolean markDead(OutboxEvent event, String error) {
    boolean claimed = event.leaseOwner() != null;
    return update(dialect.markDead(table, claimed), ps -> {
      ps.setString(1, error);
      ps.setObject(2, event.id());
      if (claimed) {
        ps.setString(3, event.leaseOwner());
      }
    }) == 1;
  }

  @Override
  public Set<UUID> release(Collection<OutboxEvent> events, Duration delay) {
    Set<UUID> released = new HashSet<>();
    byLease(events).forEach((owner, group) -> released.addAll(ids(dialect.release(table, owner != null), ps -> {
      ps.setLong(1, micros(delay));
      ps.setArray(2, ps.getConnection().createArrayOf("uuid", idArray(group)));
      if (owner != null) {
        ps.setString(3, owner);
      }
    })));
    return released;
  }

  @Override
  public Set<UUID> renewLeases(Collection<OutboxEvent> events, Duration leaseTtl) {
    Set<UUID> renewed = new HashSet<>();
    byLease(events).forEach((owner, group) -> {
      if (owner != null) {
        renewed.addAll(ids(dialect.renewLeases(table), ps -> {
          ps.setLong(1, micros(leaseTtl));
          ps.setArray(2, ps.getConnection().createArrayOf("uuid", idArray(group)));
          ps.setString(3, owner);
        }));
      }
    });
    return renewed;
  }

  @Override
  public Optional<OutboxEvent> find(UUID id) {
    return inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(dialect.find(table))) {
        ps.setObject(1, id);
        return readAll(ps).stream().findFirst();
      }
    });
  }

  @Override
  public Map<OutboxStatus, Long> countByStatus() {
    return inAutoCommit(c -> {
      Map<OutboxStatus, Long> counts = new EnumMap<>(OutboxStatus.class);
      for (OutboxStatus s : OutboxStatus.values()) {
        counts.put(s, 0L);
      }
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(dialect.countByStatus(table))) {
        while (rs.next()) {
          counts.put(OutboxStatus.valueOf(rs.getString(1)), rs.getLong(2));
        }
      }
      return counts;
    });
  }

  @Override
  public Optional<Duration> oldestPendingAge() {
    return inAutoCommit(c -> {
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery(dialect.oldestPendingAgeMicros(table))) {
        rs.next();
        long micros = rs.getLong(1);
        return rs.wasNull() ? Optional.<Duration>empty() : Optional.of(Duration.of(Math.max(0, micros), ChronoUnit.MICROS));
      }
    });
  }

  /** Moves every stored time back by {@code d}, as if {@code d} had passed. For tests only. */
  public void shiftTimesForTesting(Duration d) {
    update(dialect.shiftTimes(table), ps -> {
      for (int i = 1; i <= 4; i++) {
        ps.setLong(i, micros(d));
      }
    });
  }

  // ------------------------------------------------------------------ internals

  private static void requireTransaction(Connection connection) {
    Objects.requireNonNull(connection, "connection");
    try {
      if (connection.getAutoCommit()) {
        throw new OutboxException("append needs the caller's transaction, but the connection is in auto-commit"
            + " mode: the event would be committed apart from the business change. Call"
            + " connection.setAutoCommit(false), write the business change and the event, then commit");
      }
    } catch (SQLException e) {
      throw new OutboxException("cannot read the connection's auto-commit mode: " + e.getMessage(), e);
    }
  }

  private void bindInsert(PreparedStatement ps, OutboxEvent e) throws SQLException {
    ps.setObject(1, e.id());
    ps.setString(2, e.aggregateType());
    ps.setString(3, e.aggregateId());
    ps.setString(4, e.topic());
    ps.setString(5, e.payload());
    ps.setString(6, HeadersJson.write(e.headers()));
    ps.setInt(7, e.priority());
  }

  /** Length-prefixed so that no two distinct aggregates share a key. */
  private static String lockKey(OutboxEvent e) {
    return e.aggregateType().length() + ":" + e.aggregateType() + ":" + e.aggregateId();
  }

  private OutboxException appendFailed(SQLException e, Collection<OutboxEvent> events) {
    if ("23505".equals(e.getSQLState()) || (e.getNextException() != null
        && "23505".equals(e.getNextException().getSQLState()))) {
      UUID id = events.size() == 1 ? events.iterator().next().id() : duplicateIn(e, events);
      if (id != null) {
        return new DuplicateEventException(id);
      }
    }
    return new OutboxException("append of " + events.size() + " event(s) to " + tableName + " failed: "
        + e.getMessage() + " (SQLState " + e.getSQLState() + "); roll the transaction back", e);
  }

  private static UUID duplicateIn(SQLException e, Collection<OutboxEvent> events) {
    String text = String.valueOf(e.getMessage()) + (e.getNextException() == null ? "" : e.getNextException().getMessage());
    return events.stream().map(OutboxEvent::id).filter(id -> text.contains(id.toString())).findFirst().orElse(null);
  }

  private static Map<String, List<OutboxEvent>> byLease(Collection<OutboxEvent> events) {
    Map<String, List<OutboxEvent>> groups = new LinkedHashMap<>();
    for (OutboxEvent e : events) {
      groups.computeIfAbsent(e.leaseOwner(), k -> new ArrayList<>()).add(e);
    }
    return groups;
  }

  private static Object[] idArray(List<OutboxEvent> events) {
    return events.stream().map(OutboxEvent::id).toArray();
  }

  private static long micros(Duration d) {
    return d.toNanos() / 1_000;
  }

  private List<OutboxEvent> readAll(PreparedStatement ps) throws SQLException {
    List<OutboxEvent> events = new ArrayList<>();
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        events.add(read(rs));
      }
    }
    return events;
  }

  private static OutboxEvent read(ResultSet rs) throws SQLException {
    return OutboxEvent.builder()
        .id(rs.getObject(1, UUID.class))
        .aggregate(rs.getString(2), rs.getString(3))
        .topic(rs.getString(4))
        .payload(rs.getString(5))
        .headers(HeadersJson.read(rs.getString(6)))
        .priority(rs.getInt(7))
        .status(OutboxStatus.valueOf(rs.getString(8)))
        .attempts(rs.getInt(9))
        .nextAttemptAt(instant(rs, 10))
        .lease(rs.getString(11), instant(rs, 12))
        .createdAt(instant(rs, 13))
        .dispatchedAt(instant(rs, 14))
        .lastError(rs.getString(15))
        .build();
  }

  private static Instant instant(ResultSet rs, int column) throws SQLException {
    OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
    return t == null ? null : t.toInstant();
  }

  private int update(String statement, Binder binder) {
    return inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(statement)) {
        binder.bind(ps);
        return ps.executeUpdate();
      }
    });
  }

  private Set<UUID> ids(String statement, Binder binder) {
    return inAutoCommit(c -> {
      Set<UUID> ids = new HashSet<>();
      try (PreparedStatement ps = c.prepareStatement(statement)) {
        binder.bind(ps);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            ids.add(rs.getObject(1, UUID.class));
          }
        }
      }
      return ids;
    });
  }

  /** Runs one unit of store work on its own connection and commits it, whatever the pool's default. */
  private <T> T inAutoCommit(Work<T> work) {
    try (Connection c = dataSource.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      try {
        T result = work.run(c);
        if (!autoCommit) {
          c.commit();
        }
        return result;
      } catch (SQLException | RuntimeException e) {
        if (!autoCommit) {
          c.rollback();
        }
        throw e;
      }
    } catch (SQLException e) {
      throw new OutboxStoreException("outbox table " + tableName + ": " + e.getMessage()
          + " (SQLState " + e.getSQLState() + ")", e);
    }
  }

  @FunctionalInterface
  private interface Work<T> {
    T run(Connection c) throws SQLException;
  }

  @FunctionalInterface
  private interface Binder {
    void bind(PreparedStatement ps) throws SQLException;
  }

  /** Builds a {@link JdbcOutboxStore}; {@code dataSource} is required. */
  public static final class Builder {
    private DataSource dataSource;
    private TableName tableName = new TableName(null, DEFAULT_TABLE);
    private Dialect dialect;
    private boolean lockAggregateOnAppend = true;

    private Builder() {}

    /** Required; a pooled DataSource such as HikariCP's. */
    public Builder dataSource(DataSource dataSource) {
      this.dataSource = dataSource;
      return this;
    }

    /** The outbox table (default {@code outbox}); {@code [A-Za-z_][A-Za-z0-9_]*}, optionally {@code schema.table}. */
    public Builder table(String table) {
      this.tableName = TableName.parse("table", table);
      return this;
    }

    /** Overrides the dialect detected from the connection's metadata. */
    public Builder dialect(Dialect dialect) {
      this.dialect = dialect;
      return this;
    }

    /**
     * Take a transaction-scoped lock on each appended event's aggregate (default {@code true}). It makes
     * {@code created_at} follow commit order within an aggregate, which ordered mode relies on when two
     * transactions write the same aggregate concurrently. The lock is held until the caller's
     * transaction ends; turn it off only if you never use ordered mode or your producers already
     * serialize per aggregate and read the clock after that.
     */
    public Builder lockAggregateOnAppend(boolean lock) {
      this.lockAggregateOnAppend = lock;
      return this;
    }

    /**
     * @throws InvalidConfigurationException naming the option that is wrong
     * @throws UnsupportedDatabaseException if the database is not supported
     */
    public JdbcOutboxStore build() {
      if (dataSource == null) {
        throw new InvalidConfigurationException("dataSource is required: .dataSource(hikariDataSource)");
      }
      Dialect chosen = dialect;
      if (chosen == null) {
        try (Connection c = dataSource.getConnection()) {
          chosen = Dialect.detect(c.getMetaData());
        } catch (SQLException e) {
          throw new OutboxStoreException("cannot connect to detect the database: " + e.getMessage(), e);
        }
        LOG.info("outbox table {}: detected dialect {}", tableName, chosen.name());
      }
      return new JdbcOutboxStore(this, chosen);
    }
  }
}
