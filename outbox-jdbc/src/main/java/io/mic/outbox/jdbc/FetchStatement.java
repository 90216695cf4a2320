package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import java.sql.PreparedStatement;
import java.util.List;

/** Reads due {@code PENDING} events without changing them (no-claim mode); the same on every database. */
final class FetchStatement {
  private final TableAccess access;
  private final DispatchSql sql;

  FetchStatement(TableAccess access, DispatchSql sql) {
    this.access = access;
    this.sql = sql;
  }

  List<OutboxEvent> fetch(ClaimRequest r) {
    Dialect d = sql.dialect;
    String statement = "SELECT " + Sql.COLUMNS + " FROM " + sql.tables.outbox() + " o WHERE " + d.liveRows()
        + sql.due() + sql.notPaused("o", r) + (r.ordered() ? sql.isHead() : "")
        + " ORDER BY " + d.dispatchOrder() + " LIMIT ?";
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(statement)) {
        ps.setInt(DispatchSql.bindPaused(ps, 1, r), r.limit());
        return EventRows.readAll(ps, d);
      }
    });
  }
}
