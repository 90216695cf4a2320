package io.mic.outbox.jdbc;

import io.mic.outbox.HeldAggregate;
import io.mic.outbox.OutboxEvent;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
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
    Sql list = Sql.of("SELECT " + Sql.COLUMNS + " FROM " + table + " o WHERE o.status = 'DLQ'").plus(filter(query))
        .plus(" ORDER BY o.created_at, o.id LIMIT ?", limit);
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = list.prepare(c, dialect)) {
        return EventRows.readAllForOperators(ps, dialect);
      }
    });
  }

  /** The next {@code size} matching ids, oldest first, after {@code after}'s last when it is given. */
  Page page(DeadLetterQuery query, Page after, int size) {
    Sql page = Sql.of("SELECT o.id, o.created_at FROM " + table + " o WHERE o.status = 'DLQ'").plus(filter(query))
        .plus(after == null ? Sql.EMPTY : Sql.of(" AND (o.created_at, o.id) > (?, ?)", after.lastCreatedAt(),
            after.lastId()))
        .plus(" ORDER BY o.created_at, o.id LIMIT ?", size);
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = page.prepare(c, dialect)) {
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
    return freeing(Sql.of("UPDATE " + table + " SET status = 'PENDING', attempts = 0, next_attempt_at = "
        + dialect.now() + ", lease_owner = NULL, lease_until = NULL, last_error = CONCAT('redriven at ', "
        + dialect.timestampText(dialect.now()) + ", ' after: ', COALESCE(last_error, '')) WHERE ")
        .plus(Sql.in("id", ids)).plus(" AND status = 'DLQ'"));
  }

  /** Deletes those of {@code ids} still in the {@code DLQ}; returns how many. */
  int delete(List<UUID> ids) {
    return freeing(Sql.of("DELETE FROM " + table + " WHERE ").plus(Sql.in("id", ids)).plus(" AND status = 'DLQ'"));
  }

  /**
   * Runs {@code change}, which takes events out of the {@code DLQ}; on PostgreSQL with the parked events of the
   * aggregates it frees unparked in the same transaction ({@link PostgresParking#freeing}), so that they go on
   * at once, in order.
   */
  private int freeing(Sql change) {
    return Statements.database(dialect) == Statements.Database.POSTGRESQL ? PostgresParking.freeing(access, change)
        : access.update(change);
  }

  /**
   * Each aggregate's oldest dead event, with how many live events the aggregate has (all of them wait), for
   * the aggregates that have any, oldest dead event first: the aggregates a dispatcher holding them keeps
   * waiting ({@link io.mic.outbox.OutboxStore#heldAggregates()}).
   */
  List<HeldAggregate> held() {
    String aggregate = " AND %1$s.aggregate_type = o.aggregate_type AND %1$s.aggregate_id = o.aggregate_id";
    String read = "SELECT * FROM (SELECT o.aggregate_type, o.aggregate_id, o.id, o.created_at,"
        + " (SELECT COUNT(*) FROM " + table + " w WHERE w.status IN ('PENDING', 'PROCESSING')" + aggregate.formatted("w")
        + ") AS waiting"
        + " FROM " + table + " o WHERE o.status = 'DLQ' AND NOT EXISTS (SELECT 1 FROM " + table + " e"
        + " WHERE e.status = 'DLQ'" + aggregate.formatted("e") + " AND (e.created_at, e.id) < (o.created_at, o.id))"
        + ") h WHERE h.waiting > 0 ORDER BY h.created_at, h.id";
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(read); ResultSet rs = ps.executeQuery()) {
        List<HeldAggregate> held = new ArrayList<>();
        while (rs.next()) {
          held.add(new HeldAggregate(rs.getString(1), rs.getString(2), dialect.getId(rs, 3), rs.getLong(5)));
        }
        return held;
      }
    });
  }

  private static Sql filter(DeadLetterQuery q) {
    Sql sql = Sql.EMPTY;
    sql = sql.plus(q.topic().map(v -> Sql.of(" AND o.topic = ?", v)).orElse(Sql.EMPTY));
    sql = sql.plus(q.aggregateType().map(v -> Sql.of(" AND o.aggregate_type = ?", v)).orElse(Sql.EMPTY));
    sql = sql.plus(q.aggregateId().map(v -> Sql.of(" AND o.aggregate_id = ?", v)).orElse(Sql.EMPTY));
    sql = sql.plus(q.createdFrom().map(v -> Sql.of(" AND o.created_at >= ?", v)).orElse(Sql.EMPTY));
    sql = sql.plus(q.createdBefore().map(v -> Sql.of(" AND o.created_at < ?", v)).orElse(Sql.EMPTY));
    return sql.plus(q.errorContains().map(v -> Sql.of(" AND LOWER(o.last_error) LIKE LOWER(?) ESCAPE '!'",
        "%" + escapeLike(v) + "%")).orElse(Sql.EMPTY));
  }

  /** Makes {@code !}, {@code %} and {@code _} match themselves under {@code ESCAPE '!'}. */
  static String escapeLike(String text) {
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_");
  }
}
