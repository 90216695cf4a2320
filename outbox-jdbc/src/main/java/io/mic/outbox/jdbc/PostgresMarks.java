package io.mic.outbox.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/** PostgreSQL's batched marks: one statement each, the ids in one parameter, returning what it changed. */
final class PostgresMarks extends MarkStatements {

  PostgresMarks(TableAccess access, boolean deleteOnDispatch) {
    super(access, deleteOnDispatch);
  }

  @Override
  public Set<UUID> markDispatched(String owner, List<UUID> ids, Instant appendedBy) {
    boolean claimed = owner != null;
    return returningIds(dispatchedMark(claimed) + " WHERE id = ANY(" + PostgresDialect.ID_ARRAY + ") AND "
        + Sql.fence(claimed) + appendedNoLaterThan(appendedBy) + " RETURNING id", ps -> {
          ps.setBytes(1, Ids.bytes(ids));
          if (claimed) {
            ps.setString(2, owner);
          }
          if (appendedBy != null) {
            dialect.setInstant(ps, claimed ? 3 : 2, appendedBy);
          }
        });
  }

  @Override
  public Set<UUID> release(String owner, List<UUID> ids, Duration delay) {
    boolean claimed = owner != null;
    // the claim counted an attempt that never happened: give it back
    return returningIds("UPDATE " + table + " SET status = 'PENDING', next_attempt_at = now() + ? * interval"
        + " '1 microsecond', lease_owner = NULL, lease_until = NULL" + (claimed ? ", attempts = attempts - 1" : "")
        + " WHERE id = ANY(" + PostgresDialect.ID_ARRAY + ") AND " + Sql.fence(claimed) + " RETURNING id", ps -> {
          ps.setLong(1, TableAccess.micros(delay));
          ps.setBytes(2, Ids.bytes(ids));
          if (claimed) {
            ps.setString(3, owner);
          }
        });
  }

  @Override
  public Set<UUID> renew(String owner, List<UUID> ids, Duration leaseTtl) {
    return returningIds("UPDATE " + table + " SET lease_until = now() + ? * interval '1 microsecond'"
        + " WHERE id = ANY(" + PostgresDialect.ID_ARRAY + ") AND " + Sql.fence(true) + " RETURNING id", ps -> {
          ps.setLong(1, TableAccess.micros(leaseTtl));
          ps.setBytes(2, Ids.bytes(ids));
          ps.setString(3, owner);
        });
  }

  private Set<UUID> returningIds(String statement, TableAccess.Binder binder) {
    return access.inAutoCommit(c -> returningIds(c, dialect, statement, binder));
  }

  /** Runs {@code statement}, which ends in {@code RETURNING id}, on {@code c}: the ids it changed. */
  static Set<UUID> returningIds(Connection c, Dialect dialect, String statement, TableAccess.Binder binder)
      throws SQLException {
    Set<UUID> changed = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(statement)) {
      binder.bind(ps);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          changed.add(dialect.getId(rs, 1));
        }
      }
    }
    return changed;
  }
}
