package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The statements of {@link OutboxDeadLetters}: only rows in the {@code DLQ} are ever read or changed. A
 * {@link DeadLetterQuery} becomes conditions on alias {@code o}, each value a bind parameter.
 */
final class DeadLetterStatements {
  private final TableAccess access;
  private final Dialect dialect;
  private final String table;

  DeadLetterStatements(TableAccess access) {
    this.access = access;
    this.dialect = access.dialect;
    this.table = access.table;
  }

  /** A page of ids, oldest first, and the {@code created_at} of its last. */
  record Page(List<UUID> ids, Instant lastCreatedAt) {
    UUID lastId() {
      return ids.get(ids.size() - 1);
    }
  }

  /** The dead letters matching {@code query}, oldest first ({@code created_at}, then {@code id}). */
  List<OutboxEvent> list(DeadLetterQuery query, int limit) {
    Filter filter = Filter.of(query);
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement("SELECT " + Sql.COLUMNS + " FROM " + table
          + " o WHERE o.status = 'DLQ'" + filter.sql + " ORDER BY o.created_at, o.id LIMIT ?")) {
        ps.setInt(filter.bind(ps, 1, dialect), limit);
        return EventRows.readAllForOperators(ps, dialect);
      }
    });
  }

  /** The next {@code size} matching ids, oldest first, after {@code after}'s last when it is given. */
  Page page(DeadLetterQuery query, Page after, int size) {
    Filter filter = Filter.of(query);
    String sql = "SELECT o.id, o.created_at FROM " + table + " o WHERE o.status = 'DLQ'" + filter.sql
        + (after != null ? " AND (o.created_at, o.id) > (?, ?)" : "") + " ORDER BY o.created_at, o.id LIMIT ?";
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        int next = filter.bind(ps, 1, dialect);
        if (after != null) {
          dialect.setInstant(ps, next++, after.lastCreatedAt());
          dialect.setId(ps, next++, after.lastId());
        }
        ps.setInt(next, size);
        List<UUID> ids = new ArrayList<>();
        Instant last = null;
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            ids.add(dialect.getId(rs, 1));
            last = dialect.getInstant(rs, 2);
          }
        }
        return new Page(ids, last);
      }
    });
  }

  /**
   * Puts those of {@code ids} still in the {@code DLQ} back to {@code PENDING}, due now, with no attempts
   * and no lease, and records the redrive in {@code last_error}; returns how many.
   */
  int redrive(List<UUID> ids) {
    return access.update("UPDATE " + table + " SET status = 'PENDING', attempts = 0, next_attempt_at = "
        + dialect.now() + ", lease_owner = NULL, lease_until = NULL, last_error = CONCAT('redriven at ', "
        + dialect.timestampText(dialect.now()) + ", ' after: ', COALESCE(last_error, ''))"
        + " WHERE id IN " + Sql.placeholders(ids.size()) + " AND status = 'DLQ'", ps -> Ids.bind(ps, 1, ids, dialect));
  }

  /** Deletes those of {@code ids} still in the {@code DLQ}; returns how many. */
  int delete(List<UUID> ids) {
    return access.update("DELETE FROM " + table + " WHERE id IN " + Sql.placeholders(ids.size())
        + " AND status = 'DLQ'", ps -> Ids.bind(ps, 1, ids, dialect));
  }

  /** The query's conditions on alias {@code o}, each a bind parameter. */
  private record Filter(String sql, List<Object> values) {
    static Filter of(DeadLetterQuery q) {
      StringBuilder sql = new StringBuilder();
      List<Object> values = new ArrayList<>();
      q.topic().ifPresent(v -> add(sql, values, " AND o.topic = ?", v));
      q.aggregateType().ifPresent(v -> add(sql, values, " AND o.aggregate_type = ?", v));
      q.aggregateId().ifPresent(v -> add(sql, values, " AND o.aggregate_id = ?", v));
      q.createdFrom().ifPresent(v -> add(sql, values, " AND o.created_at >= ?", v));
      q.createdBefore().ifPresent(v -> add(sql, values, " AND o.created_at < ?", v));
      q.errorContains().ifPresent(v -> add(sql, values, " AND LOWER(o.last_error) LIKE LOWER(?) ESCAPE '!'",
          "%" + escapeLike(v) + "%"));
      return new Filter(sql.toString(), values);
    }

    private static void add(StringBuilder sql, List<Object> values, String condition, Object value) {
      sql.append(condition);
      values.add(value);
    }

    /** Makes {@code !}, {@code %} and {@code _} match themselves under {@code ESCAPE '!'}. */
    static String escapeLike(String text) {
      return text.replace("!", "!!").replace("%", "!%").replace("_", "!_");
    }

    /** Binds the values from {@code from}; returns the next parameter index. */
    int bind(PreparedStatement ps, int from, Dialect dialect) throws SQLException {
      int i = from;
      for (Object v : values) {
        if (v instanceof Instant t) {
          dialect.setInstant(ps, i++, t);
        } else {
          ps.setString(i++, (String) v);
        }
      }
      return i;
    }
  }
}
