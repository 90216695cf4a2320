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
import java.util.function.Function;

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
  Set<UUID> markDispatched(String owner, List<UUID> ids, Instant appendedBy) {
    Function<List<UUID>, Sql> mark = held -> Sql.of(dispatchedMark(owner != null) + " WHERE ").plus(Sql.in("id", held));
    if (owner == null) {
      return access.inTransaction(c -> markHeld(c, null, appendedBy, ids, mark));
    }
    return access.inTransaction(c -> {
      try (PreparedStatement ps = mark.apply(ids).plus(" AND ").plus(Sql.fence(owner)).prepare(c, dialect)) {
        if (ps.executeUpdate() == ids.size()) {
          return new HashSet<>(ids);
        }
      }
      c.rollback();
      return markHeld(c, owner, null, ids, mark);
    });
  }

  @Override
  Set<UUID> release(String owner, List<UUID> ids, Duration delay) {
    // the claim counted an attempt that never happened: give it back
    return access.inTransaction(c -> markHeld(c, owner, null, ids, held -> Sql.of("UPDATE " + table
        + " SET status = 'PENDING', next_attempt_at = ").plus(Sql.later(dialect, TableAccess.micros(delay)))
        .plus(", lease_owner = NULL, lease_until = NULL" + (owner != null ? ", attempts = attempts - 1" : "")
            + " WHERE ").plus(Sql.in("id", held))));
  }

  @Override
  Set<UUID> renew(String owner, List<UUID> ids, Duration leaseTtl) {
    return access.inTransaction(renewalAnswer(leaseTtl), c -> markHeld(c, owner, null, ids,
        held -> Sql.of("UPDATE " + table + " SET lease_until = ").plus(Sql.later(dialect, TableAccess.micros(leaseTtl)))
            .plus(" WHERE ").plus(Sql.in("id", held))));
  }

  /**
   * Locks those of {@code ids} the caller still holds (unclaimed and {@code appendedBy} not null: appended no
   * later than that, see {@link #markDispatched}), then runs {@code statement} on exactly those.
   */
  private Set<UUID> markHeld(Connection c, String owner, Instant appendedBy, List<UUID> ids,
      Function<List<UUID>, Sql> statement) throws SQLException {
    List<UUID> held = new ArrayList<>();
    Sql lock = Sql.of("SELECT id FROM " + table + " WHERE ").plus(Sql.in("id", ids)).plus(" AND ")
        .plus(Sql.fence(owner)).plus(appendedNoLaterThan(appendedBy)).plus(" FOR UPDATE");
    try (PreparedStatement ps = lock.prepare(c, dialect); ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        held.add(dialect.getId(rs, 1));
      }
    }
    if (!held.isEmpty()) {
      try (PreparedStatement ps = statement.apply(held).prepare(c, dialect)) {
        ps.executeUpdate();
      }
    }
    return new HashSet<>(held);
  }
}
