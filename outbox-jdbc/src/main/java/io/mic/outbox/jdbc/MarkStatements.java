package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.BiFunction;

/**
 * The state changes after a read or a claim, each fenced: a claimed event ({@code owner} not null) only
 * while it is {@code PROCESSING} under that owner, an unclaimed one only while it is {@code PENDING}. The
 * batched marks differ per database ({@link PostgresMarks} in one statement each, {@link LockingMarks}
 * lock-then-update); the single-row ones are the same everywhere.
 */
abstract class MarkStatements {
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
  abstract Set<UUID> markDispatched(String owner, List<UUID> ids, Instant appendedBy);

  /** Puts untried events back to {@code PENDING} after {@code delay}: no attempt is counted for them. */
  abstract Set<UUID> release(String owner, List<UUID> ids, Duration delay);

  /** Keeps {@code owner}'s claim on the events for {@code leaseTtl} more; the ids still held. */
  abstract Set<UUID> renew(String owner, List<UUID> ids, Duration leaseTtl);

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

  /** Schedules a retry after {@code delay}, with the error; counts the attempt of an unclaimed event. */
  boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
    boolean claimed = event.leaseOwner() != null;
    return update(Sql.of("UPDATE " + table + " SET status = 'PENDING', next_attempt_at = ")
        .plus(Sql.later(dialect, TableAccess.micros(delay)))
        .plus(", last_error = ?, lease_owner = NULL, lease_until = NULL" + (claimed ? "" : ", attempts = attempts + 1")
            + " WHERE id = ? AND ", error, event.id()).plus(Sql.fence(event.leaseOwner()))) == 1;
  }

  boolean markDead(OutboxEvent event, String error) {
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

  /**
   * Marks {@code events} dispatched, one call per lease owner: the unclaimed ones ({@code owner} {@code null})
   * bounded by the newest {@code created_at} among them.
   */
  Set<UUID> markDispatched(Collection<OutboxEvent> events) {
    Instant appendedBy = newestAppend(events);
    return byOwner(events, (owner, ids) -> markDispatched(owner, ids, owner == null ? appendedBy : null));
  }

  /** Puts untried {@code events} back after {@code delay}, one call per lease owner. */
  Set<UUID> release(Collection<OutboxEvent> events, Duration delay) {
    return byOwner(events, (owner, ids) -> release(owner, ids, delay));
  }

  /** Renews the claims of {@code events}, one call per lease owner; nothing to renew without a claim. */
  Set<UUID> renew(Collection<OutboxEvent> events, Duration leaseTtl) {
    return byOwner(events, (owner, ids) -> owner == null ? Set.of() : renew(owner, ids, leaseTtl));
  }

  /**
   * The newest {@code created_at} of {@code events}, which bounds an unclaimed mark
   * ({@link MarkStatements#markDispatched}); {@code null} when an event has none (not read from a store).
   */
  private static Instant newestAppend(Collection<OutboxEvent> events) {
    Instant newest = null;
    for (OutboxEvent e : events) {
      if (e.createdAt() == null) {
        return null;
      }
      newest = newest == null || e.createdAt().isAfter(newest) ? e.createdAt() : newest;
    }
    return newest;
  }

  /** Runs {@code op} once per lease owner (null: unclaimed events) and collects the ids it changed. */
  private static Set<UUID> byOwner(Collection<OutboxEvent> events, BiFunction<String, List<UUID>, Set<UUID>> op) {
    Map<String, List<UUID>> groups = new LinkedHashMap<>();
    for (OutboxEvent e : events) {
      groups.computeIfAbsent(e.leaseOwner(), k -> new ArrayList<>()).add(e.id());
    }
    Set<UUID> changed = new HashSet<>();
    groups.forEach((owner, ids) -> changed.addAll(op.apply(owner, ids)));
    return changed;
  }
}
