package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.internal.Causes;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
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
 *
 * <p>A batch whose transaction ends without its outcomes (its process died, its session was ended, it idled
 * past the lease) still counts its attempt, as a lease's claim would have, through the claim journal
 * ({@code <table>_claims}): each batch writes a row of its ids there, committed apart from its transaction,
 * and holds an advisory lock on the row's key in its transaction, taken before the row exists. The batch's
 * last outcome deletes the row in the same commit. A row whose key is free has outlived its batch: the next
 * claims count an attempt for its events that are still {@code PENDING}, once, and delete it. An event that
 * brings its process down at every publication so reaches the DLQ after {@code maxAttempts}.
 */
final class HeldClaims implements Outcomes {
  private static final Logger LOG = LoggerFactory.getLogger(HeldClaims.class);
  static final String JOURNAL_RESOURCE = "io/mic/outbox/jdbc/schema/claims-postgresql.sql";
  /** How often a store looks for ended batches, at most: a claim's extra statement, not every claim's. */
  static final long COUNT_EVERY_NANOS = Duration.ofMillis(500).toNanos();
  /** {@code lock_not_available}: a row {@code FOR UPDATE NOWAIT} wanted is locked. */
  private static final String BUSY = "55P03";

  private final TableAccess access;
  private final PostgresClaim claim;
  private final String table;
  private final boolean deleteOnDispatch;
  private final Map<String, Held> byOwner = new ConcurrentHashMap<>();
  /** The claim journal, quoted, and the first key of its advisory locks (the second is a row's claim_key). */
  private final String journal;
  private final int lockClass;
  /** When the journal was last looked through for batches that ended without their outcomes, and how often. */
  private final AtomicLong lastCount = new AtomicLong(System.nanoTime() - COUNT_EVERY_NANOS);
  private volatile long countEveryNanos = COUNT_EVERY_NANOS;

  HeldClaims(TableAccess access, PostgresClaim claim, boolean deleteOnDispatch) {
    this.access = access;
    this.claim = claim;
    this.table = access.table;
    this.deleteOnDispatch = deleteOnDispatch;
    this.journal = access.name.sibling("claims", access.dialect.identifierQuote());
    this.lockClass = journal.hashCode(); // String.hashCode is the same in every JVM
  }

  /**
   * Claims in a new transaction, which stays open, holding the rows, until the batch's last outcome; the
   * batch's ids go to the claim journal, committed at once on a connection of their own.
   */
  List<OutboxEvent> claim(ReadRequest request) {
    endForgotten();
    Connection c = null;
    boolean autoCommit = true;
    try {
      countEndedBatches();
      c = access.dataSource.getConnection();
      autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      int key = lockNewKey(c, request);
      List<OutboxEvent> events = claim.claim(c, leavingOutHeld(request), true);
      // a batch with events has its journal row before anything can settle it
      Held held = new Held(request.owner(), c, autoCommit, request.leaseMicros() * 1000, key,
          events.stream().map(OutboxEvent::id).toList());
      if (events.isEmpty()) {
        held.endIfSettled(); // commits: rows that could not be read went to the DLQ
        return events;
      }
      if (!journal(key, request.owner(), held.claimed)) {
        held.end(new SQLException("its key " + key + " was in the claim journal already"));
        return List.of();
      }
      byOwner.put(request.owner(), held);
      return events;
    } catch (SQLException e) {
      abandon(c, autoCommit, e);
      throw journalMissing(e) ? missingJournal(e) : access.failed(e);
    } catch (RuntimeException e) {
      abandon(c, autoCommit, e);
      throw e.getCause() instanceof SQLException cause && journalMissing(cause) ? missingJournal(cause) : e;
    }
  }

  /**
   * A claim from the start leaves out the events that this store's batches in flight hold, instead of stepping
   * over each of their locked rows ({@code SKIP LOCKED}), in ordered mode after probing whether it is a head.
   * A claim going on after an event starts behind them already. The events of a batch whose session ended
   * wait, for this store, until the batch's next outcome or renewal finds it ended, or its lease runs out;
   * other stores take them at once.
   */
  private ReadRequest leavingOutHeld(ReadRequest request) {
    if (request.after() != null || byOwner.isEmpty()) {
      return request;
    }
    List<UUID> held = new ArrayList<>();
    byOwner.values().forEach(h -> held.addAll(h.claimed));
    return request.leavingOut(held);
  }

  /**
   * Starts the batch's transaction: its idle timeout is the lease, and it holds the advisory lock of a new
   * journal key, free until now (a key an application's lock or a live batch holds is passed over).
   */
  private int lockNewKey(Connection c, ReadRequest request) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT set_config('idle_in_transaction_session_timeout', ?,"
        + " true), pg_try_advisory_xact_lock(?, ?)")) {
      ps.setString(1, Long.toString(Math.max(1, request.leaseMicros() / 1000)));
      ps.setInt(2, lockClass);
      while (true) {
        int key = ThreadLocalRandom.current().nextInt();
        ps.setInt(3, key);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next() && rs.getBoolean(2)) {
            return key;
          }
        }
      }
    }
  }

  /**
   * Writes the batch's row of the claim journal, committed at once; {@code false} when a row of an ended batch
   * has the same key still (one key in 2^32), and the claim must not go on.
   */
  private boolean journal(int key, String owner, Collection<UUID> ids) {
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + journal + " (claim_key, claim_owner,"
          + " event_ids) VALUES (?, ?, ?) ON CONFLICT (claim_key) DO NOTHING")) {
        ps.setInt(1, key);
        ps.setString(2, owner);
        ps.setBytes(3, Ids.bytes(List.copyOf(ids)));
        return ps.executeUpdate() == 1;
      }
    });
  }

  /**
   * Counts the attempt of each batch that ended without its outcomes, at most every
   * {@link #COUNT_EVERY_NANOS}: its journal row's key is free. In one transaction per batch, which deletes the
   * row, so that two stores count it once, and takes the key's lock first, so that the second passes it by
   * instead of waiting; a batch whose events another batch holds by now is left for a later look, without
   * waiting either.
   */
  private void countEndedBatches() {
    long last = lastCount.get();
    long now = System.nanoTime();
    if (now - last < countEveryNanos || !lastCount.compareAndSet(last, now)) {
      return;
    }
    Map<Integer, String> ended = access.inAutoCommit(c -> {
      // in auto-commit, each probe's lock ends with the statement
      Map<Integer, String> found = new HashMap<>();
      try (PreparedStatement ps = c.prepareStatement("SELECT claim_key, claim_owner FROM " + journal
          + " WHERE pg_try_advisory_xact_lock(?, claim_key)")) {
        ps.setInt(1, lockClass);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            found.put(rs.getInt(1), rs.getString(2));
          }
        }
      }
      return found;
    });
    ended.forEach((key, owner) -> {
      int counted;
      try {
        counted = access.inTransaction(c -> countAttempt(c, key, owner));
      } catch (OutboxStoreException e) {
        if (e.getCause() instanceof SQLException cause && BUSY.equals(cause.getSQLState())) {
          LOG.debug("outbox table {}: events of ended claim {} are held by another batch now; counted later",
              table, owner);
          return;
        }
        throw e;
      }
      if (counted > 0) {
        LOG.warn("outbox table {}: claim {} ended without the outcomes of its batch (its process stopped, or its"
            + " session ended): counted an attempt for its {} events still pending", table, owner, counted);
      }
    });
  }

  /** Sets how often this store looks for ended batches ({@link #COUNT_EVERY_NANOS} by default). For tests. */
  void countEvery(Duration interval) {
    countEveryNanos = interval.toNanos();
  }

  /**
   * Counts the attempt of ended batch {@code key} in {@code c}'s transaction and deletes its journal row: the
   * events counted. Throws {@link #BUSY} when one of its events is held by a live batch by now: the row then
   * stays for a later look, when that batch has ended one way or the other.
   */
  private int countAttempt(Connection c, int key, String owner) throws SQLException {
    try (PreparedStatement lock = c.prepareStatement("SELECT pg_try_advisory_xact_lock(?, ?)")) {
      lock.setInt(1, lockClass);
      lock.setInt(2, key);
      try (ResultSet rs = lock.executeQuery()) {
        if (!rs.next() || !rs.getBoolean(1)) {
          return 0; // another store counts it now
        }
      }
    }
    byte[] ids;
    try (PreparedStatement delete = c.prepareStatement("DELETE FROM " + journal + " WHERE claim_key = ?"
        + " RETURNING event_ids")) {
      delete.setInt(1, key);
      try (ResultSet rs = delete.executeQuery()) {
        if (!rs.next()) {
          return 0; // counted already, or the batch ended with its outcomes after all
        }
        ids = rs.getBytes(1);
      }
    }
    String pending = " WHERE id = ANY(" + PostgresDialect.ID_ARRAY + ") AND status = 'PENDING'";
    try (PreparedStatement free = c.prepareStatement("SELECT 1 FROM " + table + pending + " FOR UPDATE NOWAIT")) {
      free.setBytes(1, ids);
      free.executeQuery().close(); // BUSY: the transaction, with the deletion, is rolled back
    }
    try (PreparedStatement count = c.prepareStatement("UPDATE " + table + " SET attempts = attempts + 1,"
        + " last_error = ?" + pending)) {
      count.setString(1, "claim " + owner + " ended without an outcome for this event: its process stopped or its"
          + " session ended while publishing it");
      count.setBytes(2, ids);
      return count.executeUpdate();
    }
  }

  private static boolean journalMissing(SQLException e) {
    return "42P01".equals(e.getSQLState()) && e.getMessage() != null && e.getMessage().contains("_claims");
  }

  private OutboxStoreException missingJournal(SQLException e) {
    return new OutboxStoreException("outbox table " + access.name + ": transactionalClaims(true) needs its claim"
        + " journal " + access.name.derivedName("claims") + ", which is missing: call createSchema() once as the"
        + " schema's owner, or apply " + JOURNAL_RESOURCE + " for this table in a migration", e);
  }

  /** Whether {@code owner} names a batch held here. */
  boolean holds(String owner) {
    return owner != null && byOwner.containsKey(owner);
  }

  /** The rows are still {@code PENDING} under the batch's locks: no bound by append time is needed. */
  @Override
  public Set<UUID> markDispatched(String owner, List<UUID> ids, Instant appendedBy) {
    Sql mark = deleteOnDispatch ? Sql.of("DELETE FROM " + table)
        : Sql.of("UPDATE " + table + " SET status = 'DISPATCHED', dispatched_at = now(), attempts = attempts + 1,"
            + " lease_owner = ?, lease_until = NULL", owner);
    return settle(owner, ids, open -> mark.plus(" WHERE ").plus(PostgresMarks.among(open)).plus(" RETURNING id"));
  }

  @Override
  public boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
    return !settle(event.leaseOwner(), List.of(event.id()), open -> Sql.of("UPDATE " + table
        + " SET status = 'PENDING', next_attempt_at = now() + ? * interval '1 microsecond', last_error = ?,"
        + " attempts = attempts + 1, lease_owner = NULL, lease_until = NULL WHERE id = ? RETURNING id",
        TableAccess.micros(delay), error, event.id())).isEmpty();
  }

  @Override
  public boolean markDead(OutboxEvent event, String error) {
    return !settle(event.leaseOwner(), List.of(event.id()), open -> Sql.of("UPDATE " + table
        + " SET status = 'DLQ', last_error = ?, attempts = attempts + 1, lease_owner = NULL, lease_until = NULL"
        + " WHERE id = ? RETURNING id", error, event.id())).isEmpty();
  }

  /** Back untried, after {@code delay}: no attempt was counted. */
  @Override
  public Set<UUID> release(String owner, List<UUID> ids, Duration delay) {
    return settle(owner, ids, open -> Sql.of("UPDATE " + table + " SET status = 'PENDING',"
        + " next_attempt_at = now() + ? * interval '1 microsecond', lease_owner = NULL, lease_until = NULL WHERE ",
        TableAccess.micros(delay)).plus(PostgresMarks.among(open)).plus(" RETURNING id"));
  }

  /**
   * Keeps the transaction from its idle timeout with a statement in it: the ids, while it lives; none once it
   * ended (the process was frozen past the lease), and the rows are then free for others. The lease's time is
   * the transaction's idle timeout, set at the claim.
   */
  @Override
  public Set<UUID> renew(String owner, List<UUID> ids, Duration leaseTtl) {
    Held held = byOwner.get(owner);
    Boolean alive = held == null ? null : held.run(c -> {
      try (PreparedStatement ps = c.prepareStatement("SELECT 1")) {
        return ps.execute();
      }
    });
    return alive == null ? Set.of() : new HashSet<>(ids);
  }

  /**
   * Records outcomes in {@code owner}'s transaction with {@code statement} (ending in {@code RETURNING id}) on
   * those of {@code ids} that have none yet: the ids changed, none when the transaction has ended, by now or
   * before (the claim is lost, as a lease taken over is).
   */
  private Set<UUID> settle(String owner, Collection<UUID> ids, Function<List<UUID>, Sql> statement) {
    Held held = byOwner.get(owner);
    return held == null ? Set.of() : held.settle(ids, statement);
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

  private Set<UUID> returningIds(Connection c, Sql statement) throws SQLException {
    return PostgresMarks.returningIds(c, access.dialect, statement);
  }

  /** One batch's transaction, and the events it has no outcome for yet. */
  private final class Held {
    private final String owner;
    private final Connection connection;
    private final boolean autoCommit;
    /** The batch's events: its transaction holds them, their outcomes recorded or not, until it ends. */
    private final List<UUID> claimed;
    private final Set<UUID> open; // guarded by this
    private final long leaseNanos;
    /** The batch's key in the claim journal, whose advisory lock its transaction holds. */
    private final int key;
    private volatile long touched = System.nanoTime();
    private boolean ended; // guarded by this
    /** Whether the batch has a row in the claim journal, which its commit deletes: it has events. */
    private final boolean journaled;

    Held(String owner, Connection connection, boolean autoCommit, long leaseNanos, int key, List<UUID> claimed) {
      this.owner = owner;
      this.connection = connection;
      this.autoCommit = autoCommit;
      this.leaseNanos = leaseNanos;
      this.key = key;
      this.claimed = claimed;
      this.open = new HashSet<>(claimed);
      this.journaled = !claimed.isEmpty();
    }

    /**
     * Records the outcome of those of {@code ids} that have none yet with {@code statement} in the transaction,
     * which commits once every event has one: the ids changed, or none when the transaction has ended (the
     * batch's rows are back as they were, outcomes recorded before included, and its events go out again). An
     * event has one outcome, as a terminal row changes no more: another for it changes nothing.
     */
    synchronized Set<UUID> settle(Collection<UUID> ids, Function<List<UUID>, Sql> statement) {
      List<UUID> unsettled = ids.stream().filter(open::contains).toList();
      if (unsettled.isEmpty()) {
        return Set.of();
      }
      Set<UUID> changed = run(c -> returningIds(c, statement.apply(unsettled)));
      if (changed == null) {
        return Set.of();
      }
      open.removeAll(unsettled);
      return endIfSettled() ? changed : Set.of();
    }

    /**
     * Once every event has its outcome, deletes the batch's journal row and commits; {@code false} when that
     * failed, and the transaction has ended with nothing recorded.
     */
    synchronized boolean endIfSettled() {
      if (!open.isEmpty()) {
        return true;
      }
      try {
        if (journaled) {
          try (PreparedStatement ps = connection.prepareStatement("DELETE FROM " + journal + " WHERE claim_key = ?")) {
            ps.setInt(1, key);
            ps.executeUpdate();
          }
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
