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
      try (PreparedStatement ps = statement(sql, r).prepare(c, d)) {
        return EventRows.readDue(c, ps, d, sql.tables.outbox());
      }
    });
  }

  /** The read, once the control table's pauses are in {@code r}. */
  static Sql statement(DispatchSql sql, ReadRequest r) {
    return Sql.of("SELECT " + Sql.COLUMNS + " FROM " + sql.tables.outbox() + " o WHERE " + sql.liveRows() + sql.due())
        .plus(sql.notPaused("o", r)).plus(sql.notInFlight(r)).plus(sql.after(r))
        .plus((r.ordered() ? sql.isHead(r) : "") + " ORDER BY " + sql.dispatchOrder() + " LIMIT ?", r.limit());
  }
}
