package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The store's reads for operators and tests; the same on every database. */
final class EventQueries {
  private static final Logger LOG = LoggerFactory.getLogger(EventQueries.class);

  private final TableAccess access;
  private final Dialect dialect;
  private final String table;
  private final AtomicBoolean transactionsHidden = new AtomicBoolean();

  EventQueries(TableAccess access) {
    this.access = access;
    this.dialect = access.dialect;
    this.table = access.table;
  }

  Optional<OutboxEvent> find(UUID id) {
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = Sql.of("SELECT " + Sql.COLUMNS + " FROM " + table + " WHERE id = ?", id)
          .prepare(c, dialect)) {
        return EventRows.readAllForOperators(ps, dialect).stream().findFirst();
      }
    });
  }

  /** The oldest live event, first by {@code (created_at, id)}; empty when none is live. */
  Optional<OutboxEvent> oldestLive() {
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement("SELECT " + Sql.COLUMNS + " FROM " + table
          + " WHERE status IN ('PENDING', 'PROCESSING') ORDER BY created_at, id")) {
        ps.setMaxRows(1);
        return EventRows.readAllForOperators(ps, dialect).stream().findFirst();
      }
    });
  }

  /** The events of {@code topic} created in {@code [from, to]}, each with its age by the database clock. */
  List<OutboxMaintenance.EventState> createdBetween(String topic, Instant from, Instant to) {
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = Sql.of("SELECT id, aggregate_id, status, " + dialect.microsSince("created_at")
          + " FROM " + table + " WHERE topic = ? AND created_at >= ? AND created_at <= ?", topic, from, to)
          .prepare(c, dialect)) {
        List<OutboxMaintenance.EventState> events = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            events.add(new OutboxMaintenance.EventState(dialect.getId(rs, 1), rs.getString(2),
                OutboxStatus.valueOf(rs.getString(3)), Duration.of(rs.getLong(4), ChronoUnit.MICROS)));
          }
        }
        return events;
      }
    });
  }

  Map<OutboxStatus, Long> countByStatus() {
    return access.inAutoCommit(c -> {
      Map<OutboxStatus, Long> counts = new EnumMap<>(OutboxStatus.class);
      for (OutboxStatus s : OutboxStatus.values()) {
        counts.put(s, 0L);
      }
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT status, COUNT(*) FROM " + table + " GROUP BY status")) {
        while (rs.next()) {
          counts.put(OutboxStatus.valueOf(rs.getString(1)), rs.getLong(2));
        }
      }
      return counts;
    });
  }

  /** Since the oldest live event was created; empty when none is live. */
  Optional<Duration> oldestPendingAge() {
    return access.inAutoCommit(c -> {
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT "
          + dialect.microsSince("MIN(created_at)") + " FROM " + table + " WHERE status IN ('PENDING', 'PROCESSING')")) {
        rs.next();
        return age(rs);
      }
    });
  }

  /** As {@link #oldestPendingAge()}, among the events of other topics than {@code exceptTopics}. */
  Optional<Duration> oldestPendingAge(Set<String> exceptTopics) {
    if (exceptTopics.isEmpty()) {
      return oldestPendingAge();
    }
    Sql read = Sql.of("SELECT " + dialect.microsSince("MIN(created_at)") + " FROM " + table
        + " WHERE status IN ('PENDING', 'PROCESSING') AND ").plus(Sql.notIn("topic", exceptTopics));
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = read.prepare(c, dialect); ResultSet rs = ps.executeQuery()) {
        rs.next();
        return age(rs);
      }
    });
  }

  /**
   * {@link Catalog#oldestTransactionMicros()} read once; empty when none is open or the database cannot
   * tell, which includes a role the database refuses to show its transactions to (said once at WARN).
   */
  Optional<Duration> oldestTransactionAge() {
    Catalog catalog = Catalog.of(dialect);
    String sql = catalog.oldestTransactionMicros();
    if (sql == null) {
      return Optional.empty();
    }
    return access.inAutoCommit(c -> {
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
        return rs.next() ? age(rs) : Optional.<Duration>empty();
      } catch (SQLException e) {
        if (!catalog.cannotSeeTransactions(e)) {
          throw e;
        }
        if (transactionsHidden.compareAndSet(false, true)) {
          LOG.warn("outbox table {}: the database does not show this role its open transactions ({}), so"
              + " oldestTransactionAge() reports none; on MariaDB grant it PROCESS", table, e.getMessage());
        }
        return Optional.<Duration>empty();
      }
    });
  }

  /** {@link Catalog#deadTuples} for this table; empty when the database keeps no such count. */
  OptionalLong deadTuples() {
    Sql sql = Catalog.of(dialect).deadTuples(table);
    if (sql == null) {
      return OptionalLong.empty();
    }
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = sql.prepare(c, dialect); ResultSet rs = ps.executeQuery()) {
        return rs.next() ? OptionalLong.of(rs.getLong(1)) : OptionalLong.of(0);
      }
    });
  }

  /** The row's microseconds as an age; empty when {@code NULL}. */
  private static Optional<Duration> age(ResultSet rs) throws SQLException {
    long micros = rs.getLong(1);
    return rs.wasNull() ? Optional.empty() : Optional.of(Duration.of(Math.max(0, micros), ChronoUnit.MICROS));
  }
}
