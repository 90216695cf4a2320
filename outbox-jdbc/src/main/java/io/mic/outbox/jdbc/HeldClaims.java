package io.mic.outbox.jdbc;

import io.mic.outbox.ClaimedBatch;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.internal.Causes;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Claims held by transactions ({@link JdbcOutboxStore.Builder#transactionalClaims}), on PostgreSQL: a claim
 * locks its rows ({@code FOR UPDATE SKIP LOCKED}) in a transaction of its own and writes nothing; every outcome
 * of the batch runs in that transaction, which commits with the batch's last outcome. A renewal of the leases
 * is a statement in the transaction, which keeps it from its idle timeout (the lease's time).
 *
 * <p>A claim returns its batch ({@link HeldBatch}), which owns the transaction: the outcomes recorded through it
 * run there, and nothing else reaches the transaction. The events come back as a lease would return them
 * ({@code PROCESSING}, the attempt counted, the owner), so the dispatcher treats them as claimed; the rows stay
 * as they were until the outcomes, which count the attempt, or the {@link ClaimJournal} if there are none.
 */
final class HeldClaims {
  private static final Logger LOG = LoggerFactory.getLogger(HeldClaims.class);

  private final TableAccess access;
  private final PostgresClaim claim;
  private final String table;
  private final boolean deleteOnDispatch;
  /** The batches whose transactions are open: a claim leaves their events out, and ends the forgotten ones. */
  private final Set<HeldBatch> open = ConcurrentHashMap.newKeySet();
  /** Package-private for the tests that time its looks at ended batches. */
  final ClaimJournal journal;

  HeldClaims(TableAccess access, PostgresClaim claim, boolean deleteOnDispatch) {
    this.access = access;
    this.claim = claim;
    this.table = access.table;
    this.deleteOnDispatch = deleteOnDispatch;
    this.journal = new ClaimJournal(access);
  }

  /**
   * Claims in a new transaction, which stays open, holding the rows, until the batch's last outcome or its
   * close; the batch's ids go to the claim journal, committed at once on a connection of their own.
   */
  ClaimedBatch claim(ReadRequest request) {
    endForgotten();
    Connection c = null;
    boolean autoCommit = true;
    try {
      journal.countEndedBatches();
      c = access.dataSource.getConnection();
      autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      int key = journal.lockNewKey(c, request);
      List<OutboxEvent> events = request.inDispatchOrder(claim.claim(c, leavingOutHeld(request), true));
      // a batch with events has its journal row before anything can settle it
      HeldBatch batch = new HeldBatch(request.owner(), c, autoCommit, request.leaseMicros() * 1000, key, events);
      if (events.isEmpty()) {
        batch.endIfSettled(); // commits: rows that could not be read went to the DLQ
        return batch;
      }
      if (!journal.write(key, request.owner(), batch.claimed)) {
        batch.end(new SQLException("its key " + key + " was in the claim journal already"));
        return new HeldBatch(request.owner(), null, autoCommit, 0, key, List.of());
      }
      open.add(batch);
      return batch;
    } catch (SQLException e) {
      abandon(c, autoCommit, e);
      throw ClaimJournal.isMissing(e) ? journal.missing(e) : access.failed(e);
    } catch (RuntimeException e) {
      abandon(c, autoCommit, e);
      throw e.getCause() instanceof SQLException cause && ClaimJournal.isMissing(cause) ? journal.missing(cause)
          : e;
    }
  }

  /** The refusal of a claim that would return events without the batch that owns their outcomes. */
  static UnsupportedOperationException claimWithoutBatch(String table) {
    return new UnsupportedOperationException("outbox table " + table + ": its claims are held by transactions"
        + " (transactionalClaims(true)) and their outcomes go through the batch's transaction: claim with"
        + " claimBatch(request) and record the outcomes on the batch it returns");
  }

  /**
   * A claim from the start leaves out the events that this store's batches in flight hold, instead of stepping
   * over each of their locked rows ({@code SKIP LOCKED}), in ordered mode after probing whether it is a head.
   * A claim going on after an event starts behind them already. The events of a batch whose session ended
   * wait, for this store, until the batch's next outcome or renewal finds it ended, or its lease runs out;
   * other stores take them at once.
   */
  private ReadRequest leavingOutHeld(ReadRequest request) {
    if (request.after() != null || open.isEmpty()) {
      return request;
    }
    List<UUID> held = new ArrayList<>();
    open.forEach(b -> held.addAll(b.claimed));
    return request.leavingOut(held);
  }

  /**
   * Ends the transactions of batches that no outcome or renewal touched for longer than their lease, which
   * the server has ended by now too (a batch the dispatcher dropped without closing it): their connections go
   * back to the pool.
   */
  private void endForgotten() {
    long now = System.nanoTime();
    for (HeldBatch batch : open) {
      if (now - batch.touched > batch.leaseNanos) {
        batch.end(new SQLException("no outcome and no renewal for longer than its lease"));
      }
    }
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

  /**
   * One batch and its transaction, and the events it has no outcome for yet. Outcomes for events of other
   * batches change nothing: an event has its outcome in its own batch. The rows of a held batch are still
   * {@code PENDING} under its locks: no bound by append time is needed.
   */
  private final class HeldBatch implements ClaimedBatch {
    private final String owner;
    private final Connection connection; // null: a batch that never held a transaction
    private final boolean autoCommit;
    private final List<OutboxEvent> events;
    /** The batch's events: its transaction holds them, their outcomes recorded or not, until it ends. */
    private final List<UUID> claimed;
    private final Set<UUID> unsettled; // guarded by this
    private final long leaseNanos;
    /** The batch's key in the claim journal, whose advisory lock its transaction holds. */
    private final int key;
    private volatile long touched = System.nanoTime();
    private boolean ended; // guarded by this

    HeldBatch(String owner, Connection connection, boolean autoCommit, long leaseNanos, int key,
        List<OutboxEvent> events) {
      this.owner = owner;
      this.connection = connection;
      this.autoCommit = autoCommit;
      this.leaseNanos = leaseNanos;
      this.key = key;
      this.events = List.copyOf(events);
      this.claimed = events.stream().map(OutboxEvent::id).toList();
      this.unsettled = new HashSet<>(claimed);
      this.ended = connection == null;
    }

    @Override
    public List<OutboxEvent> events() {
      return events;
    }

    @Override
    public Set<UUID> markDispatched(Collection<OutboxEvent> dispatched) {
      Sql mark = deleteOnDispatch ? Sql.of("DELETE FROM " + table)
          : Sql.of("UPDATE " + table + " SET status = 'DISPATCHED', dispatched_at = now(), attempts = attempts + 1,"
              + " lease_owner = ?, lease_until = NULL", owner);
      return settle(ids(dispatched),
          settling -> mark.plus(" WHERE ").plus(PostgresMarks.among(settling)).plus(" RETURNING id"));
    }

    @Override
    public boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
      return !settle(List.of(event.id()), settling -> Sql.of("UPDATE " + table + " SET status = 'PENDING',"
          + " next_attempt_at = ").plus(Sql.later(access.dialect, TableAccess.micros(delay))).plus(", last_error = ?,"
          + " attempts = attempts + 1, lease_owner = NULL, lease_until = NULL WHERE id = ? RETURNING id", error,
          event.id())).isEmpty();
    }

    @Override
    public boolean markDead(OutboxEvent event, String error) {
      return !settle(List.of(event.id()), settling -> Sql.of("UPDATE " + table + " SET status = 'DLQ', last_error = ?,"
          + " attempts = attempts + 1, lease_owner = NULL, lease_until = NULL WHERE id = ? RETURNING id", error,
          event.id())).isEmpty();
    }

    /** Back untried, after {@code delay}: no attempt was counted. */
    @Override
    public Set<UUID> release(Collection<OutboxEvent> released, Duration delay) {
      return settle(ids(released), settling -> Sql.of("UPDATE " + table + " SET status = 'PENDING', next_attempt_at = ")
          .plus(Sql.later(access.dialect, TableAccess.micros(delay)))
          .plus(", lease_owner = NULL, lease_until = NULL WHERE ").plus(PostgresMarks.among(settling))
          .plus(" RETURNING id"));
    }

    /**
     * Keeps the transaction from its idle timeout with a statement in it: the ids of this batch still without
     * an outcome, while it lives; none once it ended (the process was frozen past the lease), and the rows are
     * then free for others. The lease's time is the transaction's idle timeout, set at the claim.
     */
    @Override
    public Set<UUID> renewLeases(Collection<OutboxEvent> renewed, Duration leaseTtl) {
      Boolean alive = run(c -> {
        try (PreparedStatement ps = c.prepareStatement("SELECT 1")) {
          return ps.execute();
        }
      });
      if (alive == null) {
        return Set.of();
      }
      synchronized (this) {
        return ids(renewed).stream().filter(unsettled::contains).collect(Collectors.toSet());
      }
    }

    /**
     * Ends the transaction: rolled back when events are left without an outcome (their rows are back as they
     * were, outcomes recorded before included, and they go out again).
     */
    @Override
    public void close() {
      synchronized (this) {
        if (ended || unsettled.isEmpty()) {
          return;
        }
      }
      end(new SQLException("closed with events left without an outcome"));
    }

    private static List<UUID> ids(Collection<OutboxEvent> events) {
      return events.stream().map(OutboxEvent::id).toList();
    }

    /**
     * Records the outcome of those of {@code ids} that have none yet with {@code statement} in the transaction,
     * which commits once every event has one: the ids changed, or none when the transaction has ended (the
     * batch's rows are back as they were, outcomes recorded before included, and its events go out again). An
     * event has one outcome, as a terminal row changes no more: another for it changes nothing.
     */
    synchronized Set<UUID> settle(Collection<UUID> ids, Function<List<UUID>, Sql> statement) {
      List<UUID> settling = ids.stream().filter(unsettled::contains).toList();
      if (settling.isEmpty()) {
        return Set.of();
      }
      Set<UUID> changed = run(c -> PostgresMarks.returningIds(c, access.dialect, statement.apply(settling)));
      if (changed == null) {
        return Set.of();
      }
      unsettled.removeAll(settling);
      return endIfSettled() ? changed : Set.of();
    }

    /**
     * Once every event has its outcome, deletes the batch's journal row and commits; {@code false} when that
     * failed, and the transaction has ended with nothing recorded.
     */
    synchronized boolean endIfSettled() {
      if (!unsettled.isEmpty()) {
        return true;
      }
      try {
        if (!claimed.isEmpty()) { // a batch with events has a journal row, which its commit deletes
          journal.delete(connection, key);
        }
        connection.commit();
      } catch (SQLException e) {
        end(e);
        return false;
      }
      end(null);
      return true;
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
      open.remove(this);
      if (failure != null) {
        LOG.warn("outbox table {}: the transaction holding claim {} ended ({}); its {} unsettled events, and the"
            + " outcomes recorded for the others, go back as they were and out again", table, owner,
            Causes.describe(failure), unsettled.size());
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
