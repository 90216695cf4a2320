package io.mic.outbox.jdbc;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.UUID;

/**
 * MariaDB 10.6+ and MySQL 8.0.16+ (InnoDB): ids as {@code CHAR(36)}, times as UTC {@code DATETIME(6)} from
 * {@code UTC_TIMESTAMP(6)} whatever the session time zone, claims through a stored {@code live_priority}
 * column whose index holds live rows only, so {@code SKIP LOCKED} locks just the rows it returns.
 */
public class MariaDbDialect implements Dialect {
  private static final int DUPLICATE_ENTRY = 1062;

  protected MariaDbDialect() {}

  @Override
  public String name() {
    return "MariaDB";
  }

  @Override
  public String schemaResource() {
    return "io/mic/outbox/jdbc/schema/mariadb.sql";
  }

  @Override
  public char identifierQuote() {
    return '`';
  }

  @Override
  public String listIndexes(int tables) {
    // information_schema shows a role the tables it has rights on, which is enough here
    return "SELECT table_name, index_name FROM information_schema.statistics WHERE table_schema ="
        + " COALESCE(?, DATABASE()) AND table_name IN " + Dialect.placeholders(tables);
  }

  @Override
  public boolean isDuplicateKey(SQLException e) {
    return e.getErrorCode() == DUPLICATE_ENTRY;
  }

  @Override
  public void setId(PreparedStatement ps, int index, UUID id) throws SQLException {
    ps.setString(index, id.toString());
  }

  @Override
  public UUID getId(ResultSet rs, int index) throws SQLException {
    return UUID.fromString(rs.getString(index));
  }

  @Override
  public Instant getInstant(ResultSet rs, int index) throws SQLException {
    LocalDateTime t = rs.getObject(index, LocalDateTime.class);
    return t == null ? null : t.toInstant(ZoneOffset.UTC);
  }

  @Override
  public String now() {
    return "UTC_TIMESTAMP(6)";
  }

  @Override
  public String plusMicros(String ts) {
    return "DATE_ADD(" + ts + ", INTERVAL ? MICROSECOND)";
  }

  @Override
  public String minusMicros(String ts) {
    return "DATE_SUB(" + ts + ", INTERVAL ? MICROSECOND)";
  }

  @Override
  public String microsSince(String ts) {
    return "TIMESTAMPDIFF(MICROSECOND, " + ts + ", UTC_TIMESTAMP(6))";
  }

  @Override
  public void setInstant(PreparedStatement ps, int index, Instant instant) throws SQLException {
    ps.setObject(index, LocalDateTime.ofInstant(instant, ZoneOffset.UTC));
  }

  @Override
  public String timestampText(String ts) {
    return "DATE_FORMAT(" + ts + ", '%Y-%m-%dT%H:%i:%s.%fZ')";
  }

  /** InnoDB keeps undo (the history list) for the oldest open transaction; reading it needs PROCESS. */
  @Override
  public String oldestTransactionMicros() {
    return "SELECT TIMESTAMPDIFF(MICROSECOND, MIN(trx_started), NOW(6)) FROM information_schema.innodb_trx"
        + " WHERE trx_mysql_thread_id <> CONNECTION_ID()";
  }

  @Override
  public String dispatchOrder() {
    return "o.live_priority DESC, o.created_at, o.id";
  }

  @Override
  public String liveRows() {
    return "o.live_priority IS NOT NULL AND ";
  }

  @Override
  public String insert(String table, String sequences) {
    // UTC_TIMESTAMP(6) is read once when the statement starts, after the lock and count statements before it
    return "INSERT INTO " + table + " (" + INSERT_COLUMNS + ") SELECT v.id, v.aggregate_type, v.aggregate_id,"
        + " v.topic, v.payload, v.headers, v.priority, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), s.last_sequence,"
        + " v.schema_version, COALESCE(v.occurred_at, UTC_TIMESTAMP(6)), v.trace_parent"
        + " FROM (SELECT ? AS id, ? AS aggregate_type, ? AS aggregate_id, ? AS topic, ? AS payload, ? AS headers,"
        + " ? AS priority, ? AS schema_version, ? AS occurred_at, ? AS trace_parent) AS v JOIN " + sequences
        + " s ON s.aggregate_type = v.aggregate_type AND s.aggregate_id = v.aggregate_id";
  }

  @Override
  public String countSequences(String sequences, int aggregates) {
    return "INSERT INTO " + sequences + " (aggregate_type, aggregate_id, last_sequence) VALUES "
        + String.join(", ", java.util.Collections.nCopies(aggregates, "(?, ?, ?)"))
        + " ON DUPLICATE KEY UPDATE last_sequence = last_sequence + VALUES(last_sequence)";
  }

  @Override
  public void setInstantOrNull(PreparedStatement ps, int index, Instant instant) throws SQLException {
    if (instant == null) {
      ps.setNull(index, java.sql.Types.TIMESTAMP);
    } else {
      setInstant(ps, index, instant);
    }
  }

  @Override
  public String listColumns() {
    return "SELECT column_name FROM information_schema.columns WHERE table_schema = COALESCE(?, DATABASE())"
        + " AND table_name = ?";
  }

  @Override
  public String lockAggregates(String lockTable, int keys) {
    // an upsert takes an exclusive row lock, held until the transaction ends
    return "INSERT INTO " + lockTable + " (lock_key) VALUES " + String.join(", ", java.util.Collections.nCopies(keys, "(?)"))
        + " ON DUPLICATE KEY UPDATE lock_key = lock_key";
  }

  @Override
  public String deleteFirst(String table, String key, String where, String order) {
    // InnoDB cannot read, in a subquery, the table a DELETE changes; it deletes in index order up to the limit
    return "DELETE FROM " + table + " WHERE " + where + " ORDER BY " + order + " LIMIT ?";
  }

  @Override
  public String inboxSchemaResource() {
    return "io/mic/outbox/jdbc/schema/inbox-mariadb.sql";
  }

  @Override
  public String guardEnsure(String guardTable) {
    return "INSERT INTO " + guardTable + " (consumer, aggregate_type, aggregate_id, last_sequence, updated_at)"
        + " VALUES (?, ?, ?, 0, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE last_sequence = last_sequence";
  }

  /**
   * {@code INSERT IGNORE}, whose ignored errors {@link #inboxRecorded} reads back as warnings. A failing
   * plain insert would be exact too, but Connector/J logs every server error at WARN, and a replay meets a
   * duplicate per event. {@code ON DUPLICATE KEY UPDATE} cannot tell a duplicate apart: with the drivers'
   * default (found rows) it reports 1 row both ways.
   */
  @Override
  public String inboxInsert(String table) {
    return "INSERT IGNORE INTO " + table + " (consumer, event_id, processed_at) VALUES (?, ?, UTC_TIMESTAMP(6))";
  }

  /**
   * One row and no warning: recorded. No row and only duplicate-key warnings (1062): a duplicate. Any other
   * warning is an error that {@code IGNORE} downgraded, and is thrown as one.
   */
  @Override
  public boolean inboxRecorded(PreparedStatement insert) throws SQLException {
    int rows = insert.executeUpdate();
    boolean duplicate = false;
    for (SQLWarning w = insert.getWarnings(); w != null; w = w.getNextWarning()) {
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
