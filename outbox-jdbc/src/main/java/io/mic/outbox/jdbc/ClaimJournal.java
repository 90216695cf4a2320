package io.mic.outbox.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The claim journal {@code <table>_claims} of the claims held by transactions ({@link HeldClaims}): how a
 * batch whose transaction ends without its outcomes (its process died, its session was ended, it idled past
 * the lease) still counts its attempt, as a lease's claim would have. Each batch writes a row of its ids there,
 * committed apart from its transaction, and holds an advisory lock on the row's key in its transaction, taken
 * before the row exists. The batch's last outcome deletes the row in the same commit. A row whose key is free
 * has outlived its batch: the next claims count an attempt for its events that are still {@code PENDING},
 * once, and delete it. An event that brings its process down at every publication so reaches the DLQ after
 * {@code maxAttempts}.
 */
final class ClaimJournal {
  private static final Logger LOG = LoggerFactory.getLogger(ClaimJournal.class);
  static final String JOURNAL_RESOURCE = "io/mic/outbox/jdbc/schema/claims-postgresql.sql";
  /** How often a store looks for ended batches, at most: a claim's extra statement, not every claim's. */
  static final long COUNT_EVERY_NANOS = Duration.ofMillis(500).toNanos();
  /** {@code lock_not_available}: a row {@code FOR UPDATE NOWAIT} wanted is locked. */
  private static final String BUSY = "55P03";

  private final TableAccess access;
  private final Dialect dialect;
  private final String table;
  /** The claim journal, quoted, and the first key of its advisory locks (the second is a row's claim_key). */
  private final String journal;
  private final int lockClass;
  /** When the journal was last looked through for batches that ended without their outcomes. */
  final AtomicLong lastCount = new AtomicLong(System.nanoTime() - COUNT_EVERY_NANOS);

  ClaimJournal(TableAccess access) {
    this.access = access;
    this.dialect = access.dialect;
    this.table = access.table;
    this.journal = access.name.sibling("claims", access.dialect.identifierQuote());
    this.lockClass = journal.hashCode(); // String.hashCode is the same in every JVM
  }

  /**
   * Starts the batch's transaction: its idle timeout is the lease, and it holds the advisory lock of a new
   * journal key, free until now (a key an application's lock or a live batch holds is passed over).
   */
  int lockNewKey(Connection c, ReadRequest request) throws SQLException {
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
  boolean write(int key, String owner, Collection<UUID> ids) {
    return access.inAutoCommit(c -> {
      Sql insert = Sql.of("INSERT INTO " + journal + " (claim_key, claim_owner, event_ids) VALUES (?, ?, ?)"
          + " ON CONFLICT (claim_key) DO NOTHING", key, owner, Ids.bytes(List.copyOf(ids)));
      try (PreparedStatement ps = insert.prepare(c, dialect)) {
        return ps.executeUpdate() == 1;
      }
    });
  }

  /** Deletes the row of batch {@code key} in {@code c}'s transaction, which commits with its last outcome. */
  void delete(Connection c, int key) throws SQLException {
    try (PreparedStatement ps = Sql.of("DELETE FROM " + journal + " WHERE claim_key = ?", key).prepare(c, dialect)) {
      ps.executeUpdate();
    }
  }

  /**
   * Counts the attempt of each batch that ended without its outcomes, at most every
   * {@link #COUNT_EVERY_NANOS}: its journal row's key is free. In one transaction per batch, which deletes the
   * row, so that two stores count it once, and takes the key's lock first, so that the second passes it by
   * instead of waiting; a batch whose events another batch holds by now is left for a later look, without
   * waiting either.
   */
  void countEndedBatches() {
    long last = lastCount.get();
    long now = System.nanoTime();
    if (now - last < COUNT_EVERY_NANOS || !lastCount.compareAndSet(last, now)) {
      return;
    }
    Map<Integer, String> ended = access.inAutoCommit(c -> {
      // in auto-commit, each probe's lock ends with the statement
      Map<Integer, String> found = new HashMap<>();
      try (PreparedStatement ps = Sql.of("SELECT claim_key, claim_owner FROM " + journal
          + " WHERE pg_try_advisory_xact_lock(?, claim_key)", lockClass).prepare(c, dialect)) {
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

  /**
   * Counts the attempt of ended batch {@code key} in {@code c}'s transaction and deletes its journal row: the
   * events counted. Throws {@link #BUSY} when one of its events is held by a live batch by now: the row then
   * stays for a later look, when that batch has ended one way or the other.
   */
  private int countAttempt(Connection c, int key, String owner) throws SQLException {
    try (PreparedStatement lock = Sql.of("SELECT pg_try_advisory_xact_lock(?, ?)", lockClass, key).prepare(c, dialect);
        ResultSet rs = lock.executeQuery()) {
      if (!rs.next() || !rs.getBoolean(1)) {
        return 0; // another store counts it now
      }
    }
    byte[] ids;
    try (PreparedStatement delete = Sql.of("DELETE FROM " + journal + " WHERE claim_key = ? RETURNING event_ids", key)
        .prepare(c, dialect); ResultSet rs = delete.executeQuery()) {
      if (!rs.next()) {
        return 0; // counted already, or the batch ended with its outcomes after all
      }
      ids = rs.getBytes(1);
    }
    String pending = " WHERE id = ANY(" + PostgresDialect.ID_ARRAY + ") AND status = 'PENDING'";
    try (PreparedStatement free = Sql.of("SELECT 1 FROM " + table + pending + " FOR UPDATE NOWAIT", ids)
        .prepare(c, dialect)) {
      free.executeQuery().close(); // BUSY: the transaction, with the deletion, is rolled back
    }
    try (PreparedStatement count = Sql.of("UPDATE " + table + " SET attempts = attempts + 1, last_error = ?" + pending,
        "claim " + owner + " ended without an outcome for this event: its process stopped or its session ended"
            + " while publishing it", ids).prepare(c, dialect)) {
      return count.executeUpdate();
    }
  }

  static boolean isMissing(SQLException e) {
    return "42P01".equals(e.getSQLState()) && e.getMessage() != null && e.getMessage().contains("_claims");
  }

  OutboxStoreException missing(SQLException e) {
    return new OutboxStoreException("outbox table " + access.name + ": transactionalClaims(true) needs its claim"
        + " journal " + access.name.derivedName("claims") + ", which is missing: call createSchema() once as the"
        + " schema's owner, or apply " + JOURNAL_RESOURCE + " for this table in a migration", e);
  }
}
