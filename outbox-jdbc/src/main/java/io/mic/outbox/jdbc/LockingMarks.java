package io.mic.outbox.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.function.IntFunction;

/**
 * The portable batched marks (MariaDB, MySQL, H2), which cannot return the rows they changed: in one
 * transaction, lock the events the caller still holds, then update exactly those.
 */
final class LockingMarks extends MarkStatements {

  LockingMarks(TableAccess access, boolean deleteOnDispatch) {
    super(access, deleteOnDispatch);
  }

  /**
   * Claimed events: one fenced statement marks the whole batch; only when it changed fewer rows than asked
   * (a lease was lost) is it rolled back and redone the exact way, locking the rows still held first.
   */
  @Override
  public Set<UUID> markDispatched(String owner, List<UUID> ids, Instant appendedBy) {
    IntFunction<String> mark = n -> dispatchedMark(owner != null) + " WHERE id IN " + Sql.placeholders(n);
    if (owner == null) {
      return access.inTransaction(c -> markHeld(c, null, appendedBy, ids, mark, (ps, next) -> next));
    }
    return access.inTransaction(c -> {
      try (PreparedStatement ps = c.prepareStatement(mark.apply(ids.size()) + " AND " + Sql.fence(true))) {
        ps.setString(Ids.bind(ps, 1, ids, dialect), owner);
        if (ps.executeUpdate() == ids.size()) {
          return new HashSet<>(ids);
        }
      }
      c.rollback();
      return markHeld(c, owner, null, ids, mark, (ps, next) -> next);
    });
  }

  @Override
  public Set<UUID> release(String owner, List<UUID> ids, Duration delay) {
    // the claim counted an attempt that never happened: give it back
    return access.inTransaction(c -> markHeld(c, owner, null, ids, n -> "UPDATE " + table + " SET status = 'PENDING',"
        + " next_attempt_at = " + dialect.plusMicros(dialect.now()) + ", lease_owner = NULL, lease_until = NULL"
        + (owner != null ? ", attempts = attempts - 1" : "") + " WHERE id IN " + Sql.placeholders(n), (ps, next) -> {
          ps.setLong(next, TableAccess.micros(delay));
          return next + 1;
        }));
  }

  @Override
  public Set<UUID> renew(String owner, List<UUID> ids, Duration leaseTtl) {
    return access.inTransaction(c -> markHeld(c, owner, null, ids, n -> "UPDATE " + table + " SET lease_until = "
        + dialect.plusMicros(dialect.now()) + " WHERE id IN " + Sql.placeholders(n), (ps, next) -> {
          ps.setLong(next, TableAccess.micros(leaseTtl));
          return next + 1;
        }));
  }

  /**
   * Locks those of {@code ids} the caller still holds (unclaimed and {@code appendedBy} not null: appended no
   * later than that, see {@link #markDispatched}), then runs {@code statement} (for that many ids) on exactly
   * those; {@code extra} binds the statement's leading parameters and returns the next index.
   */
  private Set<UUID> markHeld(Connection c, String owner, Instant appendedBy, List<UUID> ids,
      IntFunction<String> statement, ExtraBinder extra) throws SQLException {
    List<UUID> held = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement("SELECT id FROM " + table + " WHERE id IN "
        + Sql.placeholders(ids.size()) + " AND " + Sql.fence(owner != null) + appendedNoLaterThan(appendedBy)
        + " FOR UPDATE")) {
      int next = Ids.bind(ps, 1, ids, dialect);
      if (owner != null) {
        ps.setString(next++, owner);
      }
      if (appendedBy != null) {
        dialect.setInstant(ps, next, appendedBy);
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          held.add(dialect.getId(rs, 1));
        }
      }
    }
    if (!held.isEmpty()) {
      try (PreparedStatement ps = c.prepareStatement(statement.apply(held.size()))) {
        Ids.bind(ps, extra.bind(ps, 1), held, dialect);
        ps.executeUpdate();
      }
    }
    return new HashSet<>(held);
  }

  @FunctionalInterface
  private interface ExtraBinder {
    int bind(PreparedStatement ps, int from) throws SQLException;
  }
}
