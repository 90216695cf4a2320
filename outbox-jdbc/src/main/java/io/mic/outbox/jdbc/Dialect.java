package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
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
 * What differs between databases and no statement can hide: capabilities, SQL fragments, how values are
 * bound and read, and where the DDL is. One class per database overrides only what differs;
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

  /** Classpath location of the script that upgrades an outbox table of the shape before the envelope. */
  default String upgradeEnvelopeResource() {
    return schemaResource().replace(".sql", "-upgrade-envelope.sql");
  }

  /**
   * Classpath location of the script that replaces the indexes of a table created before the lean schema
   * (see {@link #obsoleteIndexes()}), or {@code null} when the dialect's indexes did not change.
   */
  default String upgradeIndexesResource() {
    return null;
  }

  /** The derived names ({@code aggregate_idx}) of indexes that {@link #upgradeIndexesResource()} replaces. */
  default List<String> obsoleteIndexes() {
    return List.of();
  }

  /** Classpath location of the inbox DDL for the default table name {@code outbox_inbox}. */
  String inboxSchemaResource();

  /**
   * Lists, as rows (table name, index name), the indexes of the named tables in one schema, each table with
   * at least its primary key; {@code createSchema()} runs no DDL when every table and index exists. Returns
   * {@code null} when the database's catalog is not known, and {@code createSchema()} then always runs the
   * DDL. Parameters: the schema (null: the connection's current one), then the {@code tables} names.
   */
  default String listIndexes(int tables) {
    return null;
  }

  /**
   * Lists the column names of one table, for {@code createSchema()} to tell whether the envelope upgrade is
   * needed; {@code null} when the catalog is not known (the upgrade then always runs). Parameters: the
   * schema (null: the connection's current one), the table.
   */
  default String listColumns() {
    return null;
  }

  /** The character that quotes identifiers. */
  default char identifierQuote() {
    return '"';
  }

  // ------------------------------------------------------------------ capabilities

  /** Whether appends lock aggregates through the {@code <table>_locks} table rather than the database's own locks. */
  default boolean usesLockTable() {
    return true;
  }

  /** Isolation of the store's own transactions: READ COMMITTED keeps InnoDB from taking gap locks. */
  default int isolation() {
    return Connection.TRANSACTION_READ_COMMITTED;
  }

  /** Whether this failure is a unique-key violation (a duplicate event id). */
  default boolean isDuplicateKey(SQLException e) {
    return "23505".equals(e.getSQLState());
  }

  // ------------------------------------------------------------------ values

  default void setId(PreparedStatement ps, int index, UUID id) throws SQLException {
    ps.setObject(index, id);
  }

  /** {@code column} is none of {@code n} ids, bound by {@link #bindIds}. */
  default String notAmong(String column, int n) {
    return column + " NOT IN " + Sql.placeholders(n);
  }

  /** Binds the ids of {@link #notAmong} from {@code from}; returns the next index. */
  default int bindIds(PreparedStatement ps, int from, List<UUID> ids) throws SQLException {
    return Ids.bind(ps, from, ids, this);
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

  /** {@code ts} plus a bound number of microseconds. */
  String plusMicros(String ts);

  /** {@code ts} minus a bound number of microseconds. */
  String minusMicros(String ts);

  /** Microseconds from {@code ts} to the database clock. */
  String microsSince(String ts);

  /** The UTC ISO-8601 text of {@code ts} with microseconds, e.g. {@code 2026-09-29T08:00:00.123456Z}. */
  default String timestampText(String ts) {
    return "CAST(" + ts + " AS VARCHAR(64))";
  }

  /** The claim and fetch order; it must match the claim index. */
  default String dispatchOrder() {
    return "o.priority DESC, o.created_at, o.id";
  }

  /**
   * The order in which retention (purge and archive) takes {@code DISPATCHED} rows: it must match an index,
   * so that a batch stops at its limit.
   */
  default String retentionOrder() {
    return "dispatched_at, id";
  }

  /**
   * One row: microseconds since the oldest open transaction of this database (other than the caller's)
   * began, of those that hold back the cleanup of deleted and updated rows, or SQL NULL when none does;
   * {@code null} when the database cannot tell.
   */
  default String oldestTransactionMicros() {
    return null;
  }

  /**
   * Whether {@code e}, thrown by {@link #oldestTransactionMicros()}, means the role may not see the
   * database's transactions: the store then cannot tell, which is not a failure of the store.
   */
  default boolean cannotSeeTransactions(SQLException e) {
    return false;
  }

  /**
   * Rows after an event in dispatch order that share its priority, bound by {@link #bindAfterInPriority}.
   * PostgreSQL starts the claim index's scan at the event; MariaDB and MySQL seek to the priority only and
   * step over the index entries before the event without reading their rows.
   */
  default String afterInPriority() {
    return "o.priority = ? AND (o.created_at, o.id) > (?, ?)";
  }

  /** Binds the event of {@link #afterInPriority} from {@code from}; returns the next index. */
  default int bindAfterInPriority(PreparedStatement ps, int from, OutboxEvent after) throws SQLException {
    ps.setInt(from, after.priority());
    setInstant(ps, from + 1, after.createdAt());
    setId(ps, from + 2, after.id());
    return from + 3;
  }

  /** A cheap filter on live rows that lets the claim index be used, or an empty string. */
  default String liveRows() {
    return "";
  }

  /**
   * Deletes up to a bound number of rows matching {@code where}, first by {@code order} (the leading column
   * of an index, so that the statement stops at the limit), in one statement. {@code key} lists the
   * primary-key columns. Parameters: those of {@code where}, then the limit. The portable form needs a
   * database that evaluates the key subquery once per statement.
   */
  default String deleteFirst(String table, String key, String where, String order) {
    return "DELETE FROM " + table + " WHERE (" + key + ") IN (SELECT " + key + " FROM " + table
        + " WHERE " + where + " ORDER BY " + order + " LIMIT ?)";
  }
}
