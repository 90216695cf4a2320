package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.internal.Causes;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Claims held by transactions ({@link JdbcOutboxStore.Builder#transactionalClaims}), on PostgreSQL: a claim
 * locks its rows ({@code FOR UPDATE SKIP LOCKED}) in a transaction of its own and writes nothing; every outcome
 * of the batch (mark, retry, DLQ, release) runs in that transaction, which commits with the batch's last
 * outcome. Other claimers skip the locked rows as they skip leased ones; a process that dies gives its rows
 * back the moment its connection closes; a frozen one loses them after the lease's time
 * ({@code idle_in_transaction_session_timeout}), and then can mark nothing, since its transaction is gone.
 * A renewal of the leases is a statement in the transaction, which keeps it from that timeout.
 *
 * <p>A batch is known by its lease owner, which is unique per claim. The events come back as a lease would
 * return them ({@code PROCESSING}, the attempt counted, the owner), so the dispatcher treats them as claimed;
 * the rows themselves stay as they were until the outcomes, which count the attempt.
 */
final class HeldClaims {
  private static final Logger LOG = LoggerFactory.getLogger(HeldClaims.class);

  private final TableAccess access;
  private final PostgresClaim claim;
  private final String table;
  private final boolean deleteOnDispatch;
  private final Map<String, Held> byOwner = new ConcurrentHashMap<>();

  HeldClaims(TableAccess access, PostgresClaim claim, boolean deleteOnDispatch) {
    this.access = access;
    this.claim = claim;
    this.table = access.table;
    this.deleteOnDispatch = deleteOnDispatch;
  }

  /** Claims in a new transaction, which stays open, holding the rows, until the batch's last outcome. */
  List<OutboxEvent> claim(ReadRequest request) {
    endForgotten();
    Connection c = null;
    boolean autoCommit = true;
    try {
      c = access.dataSource.getConnection();
      autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(
          "SELECT set_config('idle_in_transaction_session_timeout', ?, true)")) {
        ps.setString(1, Long.toString(Math.max(1, request.leaseMicros() / 1000)));
        ps.execute();
      }
      List<OutboxEvent> events = claim.claim(c, request, true);
      Held held = new Held(request.owner(), c, autoCommit, request.leaseMicros() * 1000);
      events.forEach(e -> held.open.add(e.id()));
      if (events.isEmpty()) {
        held.settle(List.of(), x -> Set.of()); // commits: rows that could not be read went to the DLQ
      } else {
        byOwner.put(request.owner(), held);
      }
      return events;
    } catch (SQLException e) {
      abandon(c, autoCommit, e);
      throw access.failed(e);
    } catch (RuntimeException e) {
      abandon(c, autoCommit, e);
      throw e;
    }
  }

  /** Whether {@code owner} names a batch held here. */
  boolean holds(String owner) {
    return owner != null && byOwner.containsKey(owner);
  }

  Set<UUID> markDispatched(String owner, List<UUID> ids) {
    return settle(owner, ids, c -> returningIds(c, (deleteOnDispatch ? "DELETE FROM " + table
        : "UPDATE " + table + " SET status = 'DISPATCHED', dispatched_at = now(), attempts = attempts + 1,"
            + " lease_owner = ?, lease_until = NULL") + " WHERE id = ANY(" + PostgresDialect.ID_ARRAY + ")"
        + " RETURNING id", ps -> {
          int next = 1;
          if (!deleteOnDispatch) {
            ps.setString(next++, owner);
          }
          ps.setBytes(next, Ids.bytes(ids));
        }));
  }

  boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
    return !settle(event.leaseOwner(), List.of(event.id()), c -> returningIds(c, "UPDATE " + table
        + " SET status = 'PENDING', next_attempt_at = now() + ? * interval '1 microsecond', last_error = ?,"
        + " attempts = attempts + 1, lease_owner = NULL, lease_until = NULL WHERE id = ? RETURNING id", ps -> {
          ps.setLong(1, TableAccess.micros(delay));
          ps.setString(2, error);
          access.dialect.setId(ps, 3, event.id());
        })).isEmpty();
  }

  boolean markDead(OutboxEvent event, String error) {
    return !settle(event.leaseOwner(), List.of(event.id()), c -> returningIds(c, "UPDATE " + table
        + " SET status = 'DLQ', last_error = ?, attempts = attempts + 1, lease_owner = NULL, lease_until = NULL"
        + " WHERE id = ? RETURNING id", ps -> {
          ps.setString(1, error);
          access.dialect.setId(ps, 2, event.id());
        })).isEmpty();
  }

  /** Back untried, after {@code delay}: no attempt was counted. */
  Set<UUID> release(String owner, List<UUID> ids, Duration delay) {
    return settle(owner, ids, c -> returningIds(c, "UPDATE " + table + " SET status = 'PENDING',"
        + " next_attempt_at = now() + ? * interval '1 microsecond', lease_owner = NULL, lease_until = NULL"
        + " WHERE id = ANY(" + PostgresDialect.ID_ARRAY + ") RETURNING id", ps -> {
          ps.setLong(1, TableAccess.micros(delay));
          ps.setBytes(2, Ids.bytes(ids));
        }));
  }

  /**
   * Keeps the transaction from its idle timeout with a statement in it: the ids, while it lives; none once it
   * ended (the process was frozen past the lease), and the rows are then free for others.
   */
  Set<UUID> renew(String owner, List<UUID> ids) {
    Held held = byOwner.get(owner);
    Boolean alive = held == null ? null : held.run(c -> {
      try (PreparedStatement ps = c.prepareStatement("SELECT 1")) {
        return ps.execute();
      }
    });
    return alive == null ? Set.of() : new HashSet<>(ids);
  }

  /**
   * Records outcomes in {@code owner}'s transaction: the ids changed, none when the transaction has ended, by
   * now or before (the claim is lost, as a lease taken over is).
   */
  private Set<UUID> settle(String owner, Collection<UUID> ids, TableAccess.Work<Set<UUID>> work) {
    Held held = byOwner.get(owner);
    return held == null ? Set.of() : held.settle(ids, work);
  }

  /**
   * Ends the transactions of batches that no outcome or renewal touched for longer than their lease, which
   * the server has ended by now too (a batch the dispatcher dropped): their connections go back to the pool.
   */
  private void endForgotten() {
    long now = System.nanoTime();
    for (Held held : byOwner.values()) {
      if (now - held.touched > held.leaseNanos) {
        held.end(new SQLException("no outcome and no renewal for longer than its lease"));
      }
    }
  }

  /** Rolls back every claim held now. */
  void endAll() {
    byOwner.values().forEach(held -> held.end(new SQLException("ended for a test")));
  }

  /** Rolls back a claim that failed and gives its connection back as it was found. */
  private static void abandon(Connection c, boolean autoCommit, Throwable cause) {
    if (c == null) {
      return;
    }
    TableAccess.rollback(c, cause);
    TableAccess.restoreAutoCommit(c, autoCommit);
    try {
      c.close();
    } catch (SQLException e) {
      cause.addSuppressed(e);
    }
  }

  private Set<UUID> returningIds(Connection c, String statement, TableAccess.Binder binder)
      throws SQLException {
    return PostgresMarks.returningIds(c, access.dialect, statement, binder);
  }

  /** One batch's transaction, and the events it has no outcome for yet. */
  private final class Held {
    private final String owner;
    private final Connection connection;
    private final boolean autoCommit;
    private final Set<UUID> open = new HashSet<>();
    private final long leaseNanos;
    private volatile long touched = System.nanoTime();
    private boolean ended; // guarded by this

    Held(String owner, Connection connection, boolean autoCommit, long leaseNanos) {
      this.owner = owner;
      this.connection = connection;
      this.autoCommit = autoCommit;
      this.leaseNanos = leaseNanos;
    }

    /**
     * Records the outcome of {@code ids} with {@code work} in the transaction, which commits once every event
     * has one: the ids changed, or none when the transaction has ended (the batch's rows are back as they were,
     * outcomes recorded before included, and its events go out again).
     */
    synchronized Set<UUID> settle(Collection<UUID> ids, TableAccess.Work<Set<UUID>> work) {
      Set<UUID> changed = run(work);
      if (changed == null) {
        return Set.of();
      }
      open.removeAll(ids);
      if (open.isEmpty()) {
        try {
          connection.commit();
        } catch (SQLException e) {
          end(e);
          return Set.of();
        }
        end(null);
      }
      return changed;
    }

    /** Runs {@code work} in the transaction; {@code null} when the transaction has ended, now or before. */
    synchronized <T> T run(TableAccess.Work<T> work) {
      if (ended) {
        return null;
      }
      try {
        T result = work.run(connection);
        touched = System.nanoTime();
        return result;
      } catch (SQLException e) {
        end(e);
        return null;
      }
    }

    /**
     * Commits ({@code failure == null}: the commit went through) or rolls back and says why, then gives the
     * connection back; once.
     */
    synchronized void end(Exception failure) {
      if (ended) {
        return;
      }
      ended = true;
      byOwner.remove(owner);
      if (failure != null) {
        LOG.warn("outbox table {}: the transaction holding claim {} ended ({}); its {} unsettled events, and the"
            + " outcomes recorded for the others, go back as they were and out again", table, owner,
            Causes.describe(failure), open.size());
        try {
          connection.rollback();
        } catch (SQLException e) {
          LOG.debug("outbox table {}: rolling back claim {} failed (its session has ended)", table, owner, e);
        }
      }
      try {
        connection.setAutoCommit(autoCommit);
        connection.close();
      } catch (SQLException e) {
        LOG.debug("outbox table {}: giving back the connection of claim {} failed", table, owner, e);
      }
    }
  }
}
