package io.mic.outbox.jdbc;

import java.sql.SQLException;
import java.util.List;

/**
 * What the store asks each database's catalog and system views: the indexes and columns of its tables (so
 * that {@code createSchema()} runs no DDL when everything exists), the indexes an upgrade replaces, and the
 * age of the oldest open transaction. Chosen with the statements ({@link Statements#database}).
 */
enum Catalog {
  POSTGRESQL("SELECT tablename, indexname FROM pg_indexes WHERE schemaname = COALESCE(CAST(? AS name),"
      + " current_schema()) AND tablename", "SELECT column_name FROM information_schema.columns WHERE table_schema ="
      + " COALESCE(CAST(? AS name), current_schema()) AND table_name = ?") {
    @Override
    String upgradeIndexesResource() {
      return "io/mic/outbox/jdbc/schema/postgresql-upgrade-lean-indexes.sql";
    }

    @Override
    List<String> obsoleteIndexes() {
      return List.of("aggregate_idx", "dispatched_idx");
    }

    @Override
    String upgradeParkingResource() {
      return "io/mic/outbox/jdbc/schema/postgresql-upgrade-parking.sql";
    }

    @Override
    Sql claimIndexesWithParked(String schema, String table, String claimIndex) {
      return Sql.of("SELECT indexname FROM pg_indexes WHERE schemaname = COALESCE(CAST(? AS name), current_schema())"
          + " AND tablename = ? AND indexname = ? AND indexdef NOT LIKE '%infinity%'", schema, table, claimIndex);
    }

    /**
     * Sessions holding a snapshot ({@code backend_xmin}) or a transaction id hold back the xmin horizon, and
     * so vacuum of every table in the database; walsenders (database NULL) do too with hot_standby_feedback,
     * and prepared transactions until they are committed. Other roles' sessions show only to a role with
     * {@code pg_read_all_stats}.
     */
    @Override
    String oldestTransactionMicros() {
      return "SELECT CAST(EXTRACT(EPOCH FROM (clock_timestamp() - min(t))) * 1000000 AS bigint) FROM ("
          + "SELECT xact_start AS t FROM pg_stat_activity WHERE (datname = current_database() OR datname IS NULL)"
          + " AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL) AND pid <> pg_backend_pid()"
          + " UNION ALL SELECT prepared FROM pg_prepared_xacts WHERE database = current_database()) AS x";
    }

    @Override
    Sql deadTuples(String table) {
      return Sql.of("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = CAST(? AS regclass)", table);
    }
  },

  /** information_schema shows a role the tables it has rights on, which is enough here. */
  MARIADB("SELECT table_name, index_name FROM information_schema.statistics WHERE table_schema ="
      + " COALESCE(?, DATABASE()) AND table_name", "SELECT column_name FROM information_schema.columns WHERE"
      + " table_schema = COALESCE(?, DATABASE()) AND table_name = ?") {
    /**
     * InnoDB keeps undo (the history list) for the oldest open transaction; reading it needs PROCESS.
     * {@code trx_started} is in the server's system time zone, whatever the session's, so the clock it is
     * compared with is taken there too.
     */
    @Override
    String oldestTransactionMicros() {
      return "SELECT TIMESTAMPDIFF(MICROSECOND, MIN(trx_started), CONVERT_TZ(NOW(6), @@session.time_zone, 'SYSTEM'))"
          + " FROM information_schema.innodb_trx WHERE trx_mysql_thread_id <> CONNECTION_ID()";
    }

    /** ER_SPECIFIC_ACCESS_DENIED_ERROR: the role lacks PROCESS. */
    @Override
    boolean cannotSeeTransactions(SQLException e) {
      return e.getErrorCode() == 1227;
    }
  },

  H2("SELECT TABLE_NAME, INDEX_NAME FROM INFORMATION_SCHEMA.INDEXES WHERE TABLE_SCHEMA = COALESCE(?, CURRENT_SCHEMA)"
      + " AND TABLE_NAME", "SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA ="
      + " COALESCE(?, CURRENT_SCHEMA) AND TABLE_NAME = ?");

  /** The indexes of the tables of a schema, up to the {@code IN} list of the tables. */
  private final String indexes;
  private final String columns;

  Catalog(String indexes, String columns) {
    this.indexes = indexes;
    this.columns = columns;
  }

  static Catalog of(Dialect dialect) {
    return valueOf(Statements.database(dialect).name());
  }

  /**
   * Rows (table name, index name) of the indexes of {@code tables} in {@code schema} (null: the connection's
   * current one), each table with at least its primary key.
   */
  Sql indexes(String schema, List<String> tables) {
    return Sql.of(indexes, schema).plus(Sql.in("", tables));
  }

  /** The column names of one table in {@code schema} (null: the connection's current one). */
  Sql columns(String schema, String table) {
    return Sql.of(columns, schema, table);
  }

  /**
   * Classpath location of the script that replaces the indexes of a table created before the lean schema
   * ({@link #obsoleteIndexes()}), or {@code null} when the database's indexes did not change.
   */
  String upgradeIndexesResource() {
    return null;
  }

  /** The derived names ({@code aggregate_idx}) of the indexes that {@link #upgradeIndexesResource()} replaces. */
  List<String> obsoleteIndexes() {
    return List.of();
  }

  /**
   * Classpath location of the script that makes the claim index leave out parked events
   * ({@link PostgresParking}), or {@code null} where there are none.
   */
  String upgradeParkingResource() {
    return null;
  }

  /**
   * The name of {@code table}'s claim index {@code claimIndex} when it holds parked events too (created before
   * them), in a row; no row when it leaves them out or does not exist. Only where
   * {@link #upgradeParkingResource()} is not {@code null}.
   */
  Sql claimIndexesWithParked(String schema, String table, String claimIndex) {
    throw new UnsupportedOperationException(name() + " parks no events");
  }

  /**
   * One row: microseconds since the oldest open transaction of this database (other than the caller's)
   * began, of those that hold back the cleanup of deleted and updated rows, or SQL NULL when none does;
   * {@code null} when the database cannot tell.
   */
  String oldestTransactionMicros() {
    return null;
  }

  /**
   * One row: the dead row versions of {@code table} not yet vacuumed (no row before the statistics first see
   * it); {@code null} when the database keeps no such count.
   */
  Sql deadTuples(String table) {
    return null;
  }

  /**
   * Whether {@code e}, thrown by {@link #oldestTransactionMicros()}, means the role may not see the
   * database's transactions: the store then cannot tell, which is not a failure of the store.
   */
  boolean cannotSeeTransactions(SQLException e) {
    return false;
  }
}
