package io.mic.outbox.jdbc;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.UUID;

/**
 * What differs between databases and no statement can hide: capabilities (how ids and times are stored,
 * isolation, duplicate keys, identifier quotes), SQL fragments, and where the DDL is. No values are bound
 * here: a fragment is text, and the statement that uses it carries the values of its parameters. One class
 * per database overrides only what differs;
 * {@link #detect(DatabaseMetaData)} picks one from the connection, and
 * {@code JdbcOutboxStore.builder().dialect(...)} overrides the choice. The statements themselves are
 * operations of the store, one class each, chosen once per database from the dialect's class: a dialect
 * of your own extends {@link PostgresDialect}, {@link MariaDbDialect} or {@link H2Dialect} and uses its
 * statements.
 *
 * <p>Fragments receive expressions and table names already validated and quoted; every value is a bind
 * parameter. The outbox table's alias is {@code o} where one is used.
 */
public interface Dialect {

  /** PostgreSQL 12 or later: claims and batched marks in one statement each. */
  Dialect POSTGRESQL = new PostgresDialect();
  /** MariaDB 10.6 or later, and MySQL 8.0.16 or later. */
  Dialect MARIADB = new MariaDbDialect();
  /** H2 2.x, in process: for tests and demos. */
  Dialect H2 = new H2Dialect();

  /** Picks the dialect for a database, or fails naming the database and what is supported. */
  static Dialect detect(DatabaseMetaData meta) throws SQLException {
    String product = meta.getDatabaseProductName();
    int major = meta.getDatabaseMajorVersion();
    int minor = meta.getDatabaseMinorVersion();
    String found = product + " " + meta.getDatabaseProductVersion();
    if ("PostgreSQL".equalsIgnoreCase(product)) {
      return require(POSTGRESQL, major >= 12, found, "PostgreSQL 12 or later (SKIP LOCKED, MATERIALIZED CTEs)");
    }
    if ("MariaDB".equalsIgnoreCase(product)) {
      return require(MARIADB, major > 10 || (major == 10 && minor >= 6), found, "MariaDB 10.6 or later (SKIP LOCKED)");
    }
    if ("MySQL".equalsIgnoreCase(product)) {
      return require(MARIADB, major >= 8, found, "MySQL 8.0.16 or later (SKIP LOCKED, CHECK constraints)");
    }
    if ("H2".equalsIgnoreCase(product)) {
      return require(H2, major >= 2, found, "H2 2.x");
    }
    throw new UnsupportedDatabaseException("database " + found + " is not supported: MIC Outbox supports"
        + " PostgreSQL 12+, MariaDB 10.6+, MySQL 8.0.16+ and H2 2.x; pass .dialect(...) to use your own Dialect");
  }

  private static Dialect require(Dialect dialect, boolean supported, String found, String needed) {
    if (!supported) {
      throw new UnsupportedDatabaseException(found + " is too old: MIC Outbox needs " + needed);
    }
    return dialect;
  }

  /** A short name for logs and errors, e.g. {@code PostgreSQL}. */
  String name();

  // ------------------------------------------------------------------ schema

  /** Classpath location of the DDL for the default table name {@code outbox}. */
  String schemaResource();

  /** Classpath location of the inbox DDL for the default table name {@code outbox_inbox}. */
  String inboxSchemaResource();

  /** The character that quotes identifiers. */
  default char identifierQuote() {
    return '"';
  }

  // ------------------------------------------------------------------ capabilities

  /** Isolation of the store's own transactions: READ COMMITTED keeps InnoDB from taking gap locks. */
  default int isolation() {
    return Connection.TRANSACTION_READ_COMMITTED;
  }

  /** Whether this failure is a unique-key violation (a duplicate event id). */
  default boolean isDuplicateKey(SQLException e) {
    return "23505".equals(e.getSQLState());
  }

  // ------------------------------------------------------------------ column types: how statements bind and read values

  default void setId(PreparedStatement ps, int index, UUID id) throws SQLException {
    ps.setObject(index, id);
  }

  default UUID getId(ResultSet rs, int index) throws SQLException {
    return rs.getObject(index, UUID.class);
  }

  default Instant getInstant(ResultSet rs, int index) throws SQLException {
    OffsetDateTime t = rs.getObject(index, OffsetDateTime.class);
    return t == null ? null : t.toInstant();
  }

  /** Binds an instant, or SQL NULL, to a parameter compared with or stored in the outbox's time columns. */
  default void setInstant(PreparedStatement ps, int index, Instant instant) throws SQLException {
    if (instant == null) {
      ps.setNull(index, java.sql.Types.TIMESTAMP_WITH_TIMEZONE);
    } else {
      ps.setObject(index, instant.atOffset(ZoneOffset.UTC));
    }
  }

  // ------------------------------------------------------------------ fragments

  /** The database clock (for reads, leases and delays), as of the transaction's or the statement's start. */
  String now();

  /**
   * The database clock as it reads when the statement runs, even late in a long transaction; a batch
   * append's times start from it. H2 has none: its clock stands still within a transaction.
   */
  default String statementClock() {
    return now();
  }

  /** {@code ts} plus a bound number of microseconds, which may be negative (the clock some time ago). */
  String plusMicros(String ts);

  /** Microseconds from {@code ts} to the database clock. */
  String microsSince(String ts);

  /** The UTC ISO-8601 text of {@code ts} with microseconds, e.g. {@code 2026-09-29T08:00:00.123456Z}. */
  default String timestampText(String ts) {
    return "CAST(" + ts + " AS VARCHAR(64))";
  }

  /**
   * The order in which retention (purge and archive) takes {@code DISPATCHED} rows: it must match an index,
   * so that a batch stops at its limit.
   */
  default String retentionOrder() {
    return "dispatched_at, id";
  }

  /**
   * Deletes up to a bound number of rows matching {@code where}, first by {@code order} (the leading column
   * of an index, so that the statement stops at the limit), in one statement. {@code key} lists the
   * primary-key columns. The limit is the one {@code ?} outside {@code where}. The portable form needs a
   * database that evaluates the key subquery once per statement.
   */
  default String deleteFirst(String table, String key, String where, String order) {
    return "DELETE FROM " + table + " WHERE (" + key + ") IN (SELECT " + key + " FROM " + table
        + " WHERE " + where + " ORDER BY " + order + " LIMIT ?)";
  }
}
