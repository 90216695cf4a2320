package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import java.sql.PreparedStatement;
import java.util.List;
import java.util.UUID;

/**
 * Reads and deletes of {@code DISPATCHED} events, for {@link OutboxMaintenance} and {@link DispatchedEvents}.
 * {@code DISPATCHED} is terminal: nothing changes these rows between a read and a delete.
 */
final class RetentionStatements {
  private final TableAccess access;
  private final Dialect dialect;

  RetentionStatements(TableAccess access) {
    this.access = access;
    this.dialect = access.dialect;
  }

  /**
   * Deletes at most {@code limit} events dispatched more than {@code retentionMicros} ago, oldest first in
   * {@link Dialect#retentionOrder()} (on PostgreSQL by id: the lean schema has no index on dispatched_at).
   */
  int purgeDispatched(long retentionMicros, int limit) {
    return access.deleteFirst("id", Sql.of("status = 'DISPATCHED' AND dispatched_at < ")
        .plus(Sql.ago(dialect, retentionMicros)), dialect.retentionOrder(), limit);
  }

  /** At most {@code limit} events dispatched more than {@code olderThanMicros} ago, oldest dispatch first. */
  List<OutboxEvent> oldestDispatched(long olderThanMicros, int limit) {
    Sql read = Sql.of("SELECT " + Sql.COLUMNS + " FROM " + access.table + " WHERE status = 'DISPATCHED' AND"
        + " dispatched_at < ").plus(Sql.ago(dialect, olderThanMicros))
        .plus(" ORDER BY " + dialect.retentionOrder() + " LIMIT ?", limit);
    return access.inTransaction(c -> {
      try (PreparedStatement ps = read.prepare(c, dialect)) {
        return EventRows.readAll(ps, dialect);
      }
    });
  }

  /** Deletes those of {@code ids} still {@code DISPATCHED}; returns how many. */
  int deleteDispatched(List<UUID> ids) {
    return access.update(Sql.of("DELETE FROM " + access.table + " WHERE ").plus(Sql.in("id", ids))
        .plus(" AND status = 'DISPATCHED'"));
  }
}
