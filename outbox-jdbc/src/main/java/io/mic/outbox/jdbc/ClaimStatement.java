package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import java.util.List;

/**
 * Claims events for one owner as a {@link ReadRequest} asks: leases them ({@code PROCESSING}, an attempt
 * counted) and returns them with their new state, in no particular order. One form per database:
 * {@link PostgresClaim} in one statement, {@link LockingClaim} as lock-then-update elsewhere.
 */
abstract class ClaimStatement {
  final TableAccess access;
  final DispatchSql sql;

  ClaimStatement(TableAccess access, DispatchSql sql) {
    this.access = access;
    this.sql = sql;
  }

  abstract List<OutboxEvent> claim(ReadRequest request);
}
