package io.mic.outbox.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Parked events on PostgreSQL: the waiting events of held aggregates ({@code holdAggregateOnDeadLetter}) stay
 * {@code PENDING} with {@code next_attempt_at = 'infinity'}, out of the claim index ({@code outbox_claim_idx}
 * leaves them out, {@code outbox_parked_idx} holds them), so that claims do not step over them again and again.
 * Parking only spares work: the claims leave held aggregates out by their dead events all the same.
 *
 * <p>The store converges to: parked if and only if {@code PENDING} and its aggregate has a {@code DLQ} event,
 * while a dispatcher that holds runs. At most every {@link #EVERY} per store, before a read or claim, one
 * transaction parks and unparks ({@link #reconcile}); a read that does not hold unparks every parked event,
 * so that a dispatcher that does not hold is never stuck. A redrive or purge unparks the events of the
 * aggregates it frees in its own transaction ({@link #unparkFreed}), so that they go on at once, in order,
 * after the redriven one. Both take one advisory lock per table first: a parker never parks, from what it
 * read before, the events a redrive has just unparked.
 */
final class PostgresParking {
  private static final Logger LOG = LoggerFactory.getLogger(PostgresParking.class);
  /** How often a store parks and unparks, at most. */
  static final Duration EVERY = Duration.ofSeconds(5);
  /** The most events one round parks; while there are more, the next read or claim runs the next round. */
  static final int PARK_BATCH = 10_000;

  private final TableAccess access;
  private final String table;
  /**
   * Makes the parked events of {@code %s} (alias {@code o}, read from {@code outbox_parked_idx}) due now: they
   * keep their place in dispatch order and in their aggregate's order.
   */
  private static final String UNPARK = "UPDATE %s o SET next_attempt_at = now() WHERE o.status = 'PENDING'"
      + " AND o.next_attempt_at = 'infinity'";

  /** When the next round is due ({@link System#nanoTime()}): the first read or claim runs one. */
  private final AtomicLong due = new AtomicLong(System.nanoTime());

  PostgresParking(TableAccess access) {
    this.access = access;
    this.table = access.table;
  }

  /**
   * Parks and unparks when a round is due: holding, parks the waiting events of aggregates with a dead event
   * and unparks those of aggregates without one; else unparks every parked event. Nothing on a table without
   * its parked events' index ({@link #indexed}). A round that fails is said at WARN and the read goes on: it
   * does not depend on parking.
   */
  void reconcile(boolean hold) {
    long now = System.nanoTime();
    long next = due.get();
    if (now - next < 0 || !due.compareAndSet(next, now + EVERY.toNanos())) {
      return;
    }
    try {
      int parked = access.inTransaction(c -> {
        if (!indexed(c)) {
          return 0;
        }
        lock(c, access);
        int p = hold ? update(c, access, park()) : 0;
        int unparked = update(c, access, Sql.of(UNPARK.formatted(table) + (hold ? noDeadEvent(table) : "")));
        if (p + unparked > 0) {
          LOG.debug("outbox table {}: parked {}, unparked {} event(s)", access.name, p, unparked);
        }
        return p;
      });
      if (parked == PARK_BATCH) {
        due.set(System.nanoTime()); // more to park: the next read parks the next batch
      }
    } catch (OutboxStoreException e) {
      LOG.warn("outbox table {}: cannot park or unpark the waiting events of held aggregates; the next read"
          + " tries again: {}", access.name, e.getMessage());
    }
  }

  /**
   * Whether the table has its parked events' index. A table created before it (and not upgraded yet) parks
   * nothing, so that a store does not read all its live rows every few seconds to unpark what nobody parked.
   */
  private boolean indexed(Connection c) throws SQLException {
    Sql exists = Sql.of("SELECT to_regclass(?) IS NOT NULL", access.name.sibling("parked_idx", '"'));
    try (PreparedStatement ps = exists.prepare(c, access.dialect); ResultSet rs = ps.executeQuery()) {
      return rs.next() && rs.getBoolean(1);
    }
  }

  /**
   * Takes the table's parking lock in {@code c}'s transaction, until it ends. Under READ COMMITTED the
   * statements after it see what the holder before committed.
   */
  static void lock(Connection c, TableAccess access) throws SQLException {
    Sql lock = Sql.of("SELECT pg_advisory_xact_lock(hashtext(?))", "mic-outbox parking " + access.table);
    try (PreparedStatement ps = lock.prepare(c, access.dialect)) {
      ps.execute();
    }
  }

  /**
   * After a redrive or purge in {@code c}'s transaction, which took the {@link #lock} first: unparks the
   * events of {@code aggregates} (each a type and an id) that have no dead event left; returns how many.
   */
  static int unparkFreed(Connection c, TableAccess access, Set<List<String>> aggregates) throws SQLException {
    if (aggregates.isEmpty()) {
      return 0;
    }
    List<Object> values = new ArrayList<>();
    aggregates.forEach(values::addAll);
    String pairs = String.join(", ", java.util.Collections.nCopies(aggregates.size(), "(?, ?)"));
    return update(c, access, Sql.of(UNPARK.formatted(access.table) + " AND (o.aggregate_type, o.aggregate_id) IN ("
        + pairs + ")" + noDeadEvent(access.table), values.toArray()));
  }

  /**
   * Runs {@code change} (a redrive or a purge of dead events, returning their aggregates' type and id) in one
   * transaction with the {@link #lock} and {@link #unparkFreed}; returns how many rows it changed.
   */
  static int freeing(TableAccess access, Sql change) {
    return access.inTransaction(c -> {
      lock(c, access);
      Set<List<String>> aggregates = new LinkedHashSet<>();
      int changed = 0;
      try (PreparedStatement ps = change.plus(" RETURNING aggregate_type, aggregate_id").prepare(c, access.dialect);
          ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          changed++;
          aggregates.add(List.of(rs.getString(1), rs.getString(2)));
        }
      }
      int unparked = unparkFreed(c, access, aggregates);
      if (unparked > 0) {
        LOG.debug("outbox table {}: unparked {} event(s) of {} aggregate(s)", access.name, unparked, aggregates.size());
      }
      return changed;
    });
  }

  /**
   * Parks a batch of waiting events of aggregates with a dead event, passing over the rows a claim held by a
   * transaction locks ({@link HeldClaims}): the next round parks them.
   */
  private Sql park() {
    return Sql.of("UPDATE " + table + " SET next_attempt_at = 'infinity' WHERE id = ANY(ARRAY(SELECT o.id FROM "
        + table + " o WHERE o.status = 'PENDING' AND o.next_attempt_at < 'infinity' AND (o.aggregate_type,"
        + " o.aggregate_id) IN (SELECT d.aggregate_type, d.aggregate_id FROM " + table + " d WHERE d.status = 'DLQ')"
        + " LIMIT ? FOR UPDATE OF o SKIP LOCKED))", PARK_BATCH);
  }

  /**
   * No dead event in the aggregate of {@code o}: a hash of the aggregates with dead events, built once per
   * statement ({@code NOT IN}), instead of a probe per parked event: an unparking reads every parked event.
   */
  private static String noDeadEvent(String table) {
    return " AND (o.aggregate_type, o.aggregate_id) NOT IN (SELECT d.aggregate_type, d.aggregate_id FROM " + table
        + " d WHERE d.status = 'DLQ')";
  }

  private static int update(Connection c, TableAccess access, Sql statement) throws SQLException {
    try (PreparedStatement ps = statement.prepare(c, access.dialect)) {
      return ps.executeUpdate();
    }
  }
}
