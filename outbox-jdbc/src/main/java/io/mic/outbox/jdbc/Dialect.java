package io.mic.outbox.jdbc;

import java.sql.DatabaseMetaData;
import java.sql.SQLException;

/**
 * What differs between databases: capabilities and the text of each statement. One implementation per
 * database overrides only what differs; {@link #detect(DatabaseMetaData)} picks one from the connection,
 * and {@code JdbcOutboxStore.builder().dialect(...)} overrides the choice.
 *
 * <p>Statements receive the table name already validated and quoted. Every value is a bind parameter;
 * the order of the parameters is documented on each method and fixed for all dialects.
 */
public interface Dialect {

  /** PostgreSQL 12 or later. */
  Dialect POSTGRESQL = new PostgresDialect();

  /** A short name for logs and errors, e.g. {@code PostgreSQL}. */
  String name();

  /** Classpath location of the DDL for the default table name {@code outbox}. */
  String schemaResource();

  /** The character that quotes identifiers. */
  char identifierQuote();

  /** Picks the dialect for a database, or fails naming the database and what is supported. */
  static Dialect detect(DatabaseMetaData meta) throws SQLException {
    String product = meta.getDatabaseProductName();
    int major = meta.getDatabaseMajorVersion();
    if ("PostgreSQL".equalsIgnoreCase(product)) {
      if (major < 12) {
        throw new UnsupportedDatabaseException(product + " " + meta.getDatabaseProductVersion()
            + " is too old: MIC Outbox needs PostgreSQL 12 or later (SKIP LOCKED, MATERIALIZED CTEs)");
      }
      return POSTGRESQL;
    }
    throw new UnsupportedDatabaseException("database " + product + " " + meta.getDatabaseProductVersion()
        + " is not supported yet: MIC Outbox supports PostgreSQL 12+; pass .dialect(...) to use your own"
        + " Dialect implementation");
  }

  // ---- appends

  /**
   * Inserts one event; {@code created_at} and {@code next_attempt_at} from the database clock at the
   * moment of the insert. Parameters: id, aggregate_type, aggregate_id, topic, payload, headers, priority.
   */
  String insert(String table);

  /**
   * Like {@link #insert} but first takes a transaction-scoped lock on the event's aggregate, so events
   * of one aggregate get {@code created_at} in commit order. Parameters as {@link #insert}, then the
   * aggregate lock key.
   */
  String insertLocked(String table);

  /** Locks several aggregates at once, in a fixed order so that two batches never deadlock. Parameter: the keys. */
  String lockAggregates();

  // ---- dispatch

  /** Reads due {@code PENDING} events. Parameter: limit. */
  String fetchPending(String table, boolean ordered);

  /** Claims due events in one statement. Parameters: limit, lease owner, lease micros. Returns the rows. */
  String claim(String table, boolean ordered);

  /**
   * Claims heads and, behind each, up to a run of due {@code PENDING} events of the same aggregate (see
   * {@code OutboxStore.claimRuns}). Parameters: head limit, run length minus one, overall limit, lease
   * owner, lease micros. Returns the rows in any order.
   */
  String claimRuns(String table);

  /** Marks claimed events dispatched. Parameters: ids, lease owner. Returns the ids marked. */
  String markDispatchedClaimed(String table);

  /** Marks unclaimed events dispatched, counting their attempt. Parameter: ids. Returns the ids marked. */
  String markDispatchedUnclaimed(String table);

  /** Schedules a retry. Parameters: delay micros, error, id, then the lease owner when claimed. */
  String scheduleRetry(String table, boolean claimed);

  /** Moves to DLQ. Parameters: error, id, then the lease owner when claimed. */
  String markDead(String table, boolean claimed);

  /** Releases untried events. Parameters: delay micros, ids, then the lease owner when claimed. */
  String release(String table, boolean claimed);

  /** Extends leases. Parameters: lease micros, ids, lease owner. Returns the ids renewed. */
  String renewLeases(String table);

  // ---- reads

  /** Parameter: id. */
  String find(String table);

  String countByStatus(String table);

  /** One row: the age in microseconds of the oldest live event, or null. */
  String oldestPendingAgeMicros(String table);

  /** Shifts every stored time back; for tests that need time to pass. Parameter: micros. */
  String shiftTimes(String table);
}
