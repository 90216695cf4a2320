package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * The state changes after a read or a claim, each fenced: a claimed event ({@code owner} not null) only
 * while it is {@code PROCESSING} under that owner, an unclaimed one only while it is {@code PENDING}. The
 * batched marks differ per database ({@link PostgresMarks} in one statement each, {@link LockingMarks}
 * lock-then-update); the single-row ones are the same everywhere.
 */
abstract class MarkStatements implements Outcomes {
  final TableAccess access;
  final Dialect dialect;
  final String table;
  /** {@link JdbcOutboxStore.Builder#deleteOnDispatch}: the mark deletes the row. */
  final boolean deleteOnDispatch;

  MarkStatements(TableAccess access, boolean deleteOnDispatch) {
    this.access = access;
    this.dialect = access.dialect;
    this.table = access.table;
    this.deleteOnDispatch = deleteOnDispatch;
  }

  /**
   * Marks events dispatched, counting the attempt of unclaimed ones; a dispatched row keeps the lease owner
   * of the claim that dispatched it. With {@link #deleteOnDispatch} the same fence deletes the rows instead.
   * Unclaimed, only rows appended no later than {@code appendedBy} (the newest {@code created_at} of the
   * events; {@code null}: no bound): once a deleting mark committed, a new event may be appended under one of
   * its ids, and the mark tried again after a lost answer must leave that event alone. Returns the ids marked.
   */
  @Override
  public abstract Set<UUID> markDispatched(String owner, List<UUID> ids, Instant appendedBy);

  /**
   * How long a renewal may wait for the database: from when it is due (a third of the lease after the last one)
   * until the lease runs out. An answer after that saves nothing, and a renewal that waits for ever on a
   * partition would hold up the renewals of every dispatcher in the process.
   */
  static Duration renewalAnswer(Duration leaseTtl) {
    return leaseTtl.multipliedBy(2).dividedBy(3);
  }

  /** The bound of {@link #markDispatched} on unclaimed rows; nothing when there is none. */
  static Sql appendedNoLaterThan(Instant appendedBy) {
    return appendedBy == null ? Sql.EMPTY : Sql.of(" AND created_at <= ?", appendedBy);
  }

  /** The start of the mark of {@code markDispatched}, up to its {@code WHERE}. */
  String dispatchedMark(boolean claimed) {
    return deleteOnDispatch ? "DELETE FROM " + table
        : "UPDATE " + table + " SET status = 'DISPATCHED', dispatched_at = " + dialect.now() + ", lease_until = NULL"
            + (claimed ? "" : ", attempts = attempts + 1");
  }

  @Override
  public boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
    boolean claimed = event.leaseOwner() != null;
    return update(Sql.of("UPDATE " + table + " SET status = 'PENDING', next_attempt_at = "
        + dialect.plusMicros(dialect.now()) + ", last_error = ?, lease_owner = NULL, lease_until = NULL"
        + (claimed ? "" : ", attempts = attempts + 1") + " WHERE id = ? AND ", TableAccess.micros(delay), error,
        event.id()).plus(Sql.fence(event.leaseOwner()))) == 1;
  }

  @Override
  public boolean markDead(OutboxEvent event, String error) {
    boolean claimed = event.leaseOwner() != null;
    return update(Sql.of("UPDATE " + table + " SET status = 'DLQ', last_error = ?, lease_owner = NULL,"
        + " lease_until = NULL" + (claimed ? "" : ", attempts = attempts + 1") + " WHERE id = ? AND ", error,
        event.id()).plus(Sql.fence(event.leaseOwner()))) == 1;
  }

  int update(Sql statement) {
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = statement.prepare(c, dialect)) {
        return ps.executeUpdate();
      }
    });
  }
}
