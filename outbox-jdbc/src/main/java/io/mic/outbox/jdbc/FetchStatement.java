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

  /** Reads what {@code request} asks for; the control table first, on the same connection, when it honours it. */
  List<OutboxEvent> fetch(ReadRequest request) {
    Dialect d = sql.dialect;
    return access.inAutoCommit(c -> {
      ReadRequest r = ControlStatements.merge(c, request, sql.tables.control(), d);
      if (r == null) {
        return List.of();
      }
      try (PreparedStatement ps = c.prepareStatement(statement(sql, r))) {
        ps.setInt(sql.bindAfter(ps, sql.bindInFlight(ps, DispatchSql.bindPaused(ps, 1, r), r), r), r.limit());
        return EventRows.readDue(c, ps, d, sql.tables.outbox());
      }
    });
  }

  /**
   * The read, once the control table's pauses are in {@code r}. Parameters: the paused topics, the events in
   * flight, the position to go on from, limit.
   */
  static String statement(DispatchSql sql, ReadRequest r) {
    Dialect d = sql.dialect;
    return "SELECT " + Sql.COLUMNS + " FROM " + sql.tables.outbox() + " o WHERE " + d.liveRows() + sql.due()
        + sql.notPaused("o", r) + sql.notInFlight(r) + sql.after(r) + (r.ordered() ? sql.isHead() : "") + " ORDER BY "
        + d.dispatchOrder() + " LIMIT ?";
  }
}
