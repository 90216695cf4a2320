package io.mic.outbox.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.util.HashSet;
import java.util.Set;

/**
 * The statements of {@link JdbcInbox}: the record of a processed event and the ordering guard, in the
 * caller's transaction, and the purge. Recording a duplicate and creating a guard row under concurrency
 * differ per database: {@link Postgres}, {@link MariaDb}, and the portable form here (H2).
 */
class InboxStatements {
  final TableAccess access;
  final Dialect dialect;
  final String table;
  /** The ordering guard's table, {@code <table>_sequences}. */
  final String guardTable;

  InboxStatements(TableAccess access) {
    this.access = access;
    this.dialect = access.dialect;
    this.table = access.table;
    this.guardTable = access.name.sibling("sequences", dialect.identifierQuote());
  }

  static InboxStatements of(TableAccess access) {
    return switch (Statements.database(access.dialect)) {
      case POSTGRESQL -> new Postgres(access);
      case MARIADB -> new MariaDb(access);
      case H2 -> new InboxStatements(access);
    };
  }

  /**
   * Records a processed event, {@code processed_at} from the database clock: {@code true} when it recorded
   * it, {@code false} when the event was already recorded (or is being recorded by a transaction that then
   * commits). Neither commits nor rolls back. The portable form is a plain insert: a duplicate fails with a
   * unique-key violation that the database rolls back alone, leaving the caller's transaction usable.
   */
  boolean record(Connection c, String consumer, String eventId) throws SQLException {
    try (PreparedStatement ps = Sql.of("INSERT INTO " + table + " (consumer, event_id, processed_at)"
        + " VALUES (?, ?, " + dialect.now() + ")", consumer, eventId).prepare(c, dialect)) {
      return ps.executeUpdate() == 1;
    } catch (SQLException e) {
      if (dialect.isDuplicateKey(e)) {
        return false; // only the failed statement was rolled back
      }
      throw e;
    }
  }

  Set<String> eventIds(Connection c, String consumer) throws SQLException {
    try (PreparedStatement ps = Sql.of("SELECT event_id FROM " + table + " WHERE consumer = ?", consumer)
        .prepare(c, dialect)) {
      Set<String> ids = new HashSet<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getString(1));
        }
      }
      return ids;
    }
  }

  /**
   * Creates, at last sequence 0, the guard row of a consumer and aggregate if it is missing, safe against a
   * concurrent creation (it waits for the other transaction, then does nothing). {@code MERGE … KEY} waits
   * for a concurrent creation of the same row, then updates it to the same key.
   */
  Sql guardEnsure(String consumer, String aggregateType, String aggregateId) {
    return Sql.of("MERGE INTO " + guardTable + " (consumer, aggregate_type, aggregate_id)"
        + " KEY (consumer, aggregate_type, aggregate_id) VALUES (?, ?, ?)", consumer, aggregateType, aggregateId);
  }

  /** Creates the guard row if it is missing, then locks it and returns its last sequence, or -1 if it vanished. */
  long lockGuard(Connection c, String consumer, String aggregateType, String aggregateId) throws SQLException {
    try (PreparedStatement ps = guardEnsure(consumer, aggregateType, aggregateId).prepare(c, dialect)) {
      ps.executeUpdate();
    }
    Sql lock = Sql.of("SELECT last_sequence FROM " + guardTable + " WHERE consumer = ? AND aggregate_type = ? AND"
        + " aggregate_id = ? FOR UPDATE", consumer, aggregateType, aggregateId);
    try (PreparedStatement ps = lock.prepare(c, dialect); ResultSet rs = ps.executeQuery()) {
      return rs.next() ? rs.getLong(1) : -1;
    }
  }

  void advanceGuard(Connection c, String consumer, String aggregateType, String aggregateId, long sequence)
      throws SQLException {
    try (PreparedStatement ps = Sql.of("UPDATE " + guardTable + " SET last_sequence = ?, updated_at = " + dialect.now()
        + " WHERE consumer = ? AND aggregate_type = ? AND aggregate_id = ?", sequence, consumer, aggregateType,
        aggregateId).prepare(c, dialect)) {
      ps.executeUpdate();
    }
  }

  /** Deletes at most {@code limit} records processed more than {@code retentionMicros} ago. */
  int purge(long retentionMicros, int limit) {
    return access.deleteFirst("consumer, event_id", Sql.of("processed_at < ").plus(Sql.ago(dialect, retentionMicros)),
        "processed_at", limit);
  }

  /** PostgreSQL: a failing statement would abort the caller's whole transaction, so a duplicate must not fail. */
  static final class Postgres extends InboxStatements {
    Postgres(TableAccess access) {
      super(access);
    }

    @Override
    boolean record(Connection c, String consumer, String eventId) throws SQLException {
      try (PreparedStatement ps = Sql.of("INSERT INTO " + table + " (consumer, event_id, processed_at)"
          + " VALUES (?, ?, now()) ON CONFLICT (consumer, event_id) DO NOTHING", consumer, eventId)
          .prepare(c, dialect)) {
        return ps.executeUpdate() == 1;
      }
    }

    @Override
    Sql guardEnsure(String consumer, String aggregateType, String aggregateId) {
      return Sql.of("INSERT INTO " + guardTable + " (consumer, aggregate_type, aggregate_id, last_sequence, updated_at)"
          + " VALUES (?, ?, ?, 0, now()) ON CONFLICT (consumer, aggregate_type, aggregate_id) DO NOTHING", consumer,
          aggregateType, aggregateId);
    }
  }

  /**
   * MariaDB and MySQL: {@code INSERT IGNORE}, whose ignored errors are read back as warnings. A failing plain
   * insert would be exact too, but Connector/J logs every server error at WARN, and a replay meets a
   * duplicate per event. {@code ON DUPLICATE KEY UPDATE} cannot tell a duplicate apart: with the drivers'
   * default (found rows) it reports 1 row both ways.
   */
  static final class MariaDb extends InboxStatements {
    private static final int DUPLICATE_ENTRY = 1062;

    MariaDb(TableAccess access) {
      super(access);
    }

    /**
     * One row and no warning: recorded. No row and only duplicate-key warnings (1062): a duplicate. Any other
     * warning is an error that {@code IGNORE} downgraded, and is thrown as one.
     */
    @Override
    boolean record(Connection c, String consumer, String eventId) throws SQLException {
      try (PreparedStatement ps = Sql.of("INSERT IGNORE INTO " + table + " (consumer, event_id, processed_at)"
          + " VALUES (?, ?, UTC_TIMESTAMP(6))", consumer, eventId).prepare(c, dialect)) {
        int rows = ps.executeUpdate();
        boolean duplicate = false;
        for (SQLWarning w = ps.getWarnings(); w != null; w = w.getNextWarning()) {
          if (w.getErrorCode() != DUPLICATE_ENTRY) {
            throw new SQLException("inbox insert was not clean: " + w.getMessage() + " (error " + w.getErrorCode()
                + ")", w.getSQLState(), w.getErrorCode());
          }
          duplicate = true;
        }
        if (rows == 1 && !duplicate) {
          return true;
        }
        if (rows == 0 && duplicate) {
          return false;
        }
        throw new SQLException("inbox insert changed " + rows + " row(s) and reported " + (duplicate ? "a" : "no")
            + " duplicate key; if the session's max_error_count is 0, raise it so that duplicates can be told apart");
      }
    }

    @Override
    Sql guardEnsure(String consumer, String aggregateType, String aggregateId) {
      return Sql.of("INSERT INTO " + guardTable + " (consumer, aggregate_type, aggregate_id, last_sequence, updated_at)"
          + " VALUES (?, ?, ?, 0, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE last_sequence = last_sequence", consumer,
          aggregateType, aggregateId);
    }
  }
}
