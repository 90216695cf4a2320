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
  Set<UUID> markDispatched(String owner, List<UUID> ids, Instant appendedBy) {
    return returningIds(Sql.of(dispatchedMark(owner != null) + " WHERE ").plus(among(ids)).plus(" AND ")
        .plus(Sql.fence(owner)).plus(appendedNoLaterThan(appendedBy)).plus(" RETURNING id"));
  }

  @Override
  Set<UUID> release(String owner, List<UUID> ids, Duration delay) {
    // the claim counted an attempt that never happened: give it back
    return returningIds(Sql.of("UPDATE " + table + " SET status = 'PENDING', next_attempt_at = now() + ? * interval"
        + " '1 microsecond', lease_owner = NULL, lease_until = NULL" + (owner != null ? ", attempts = attempts - 1" : "")
        + " WHERE ", TableAccess.micros(delay)).plus(among(ids)).plus(" AND ").plus(Sql.fence(owner))
        .plus(" RETURNING id"));
  }

  @Override
  Set<UUID> renew(String owner, List<UUID> ids, Duration leaseTtl) {
    Sql renewal = Sql.of("UPDATE " + table + " SET lease_until = ")
        .plus(Sql.later(dialect, TableAccess.micros(leaseTtl))).plus(" WHERE ").plus(among(ids)).plus(" AND ")
        .plus(Sql.fence(owner)).plus(" RETURNING id");
    return access.inAutoCommit(renewalAnswer(leaseTtl), c -> returningIds(c, dialect, renewal));
  }

  /** {@code id} is one of {@code ids}, bound as one {@code bytea} ({@link PostgresDialect#ID_ARRAY}). */
  static Sql among(List<UUID> ids) {
    return Sql.of("id = ANY(" + PostgresDialect.ID_ARRAY + ")", Ids.bytes(ids));
  }

  private Set<UUID> returningIds(Sql statement) {
    return access.inAutoCommit(c -> returningIds(c, dialect, statement));
  }

  /** Runs {@code statement}, which ends in {@code RETURNING id}, on {@code c}: the ids it changed. */
  static Set<UUID> returningIds(Connection c, Dialect dialect, Sql statement) throws SQLException {
    Set<UUID> changed = new HashSet<>();
    try (PreparedStatement ps = statement.prepare(c, dialect); ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        changed.add(dialect.getId(rs, 1));
      }
    }
    return changed;
  }
}
