package io.mic.outbox.jdbc;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
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
  public boolean isDuplicateKey(SQLException e) {
    return e.getErrorCode() == 1062;
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
  public String dispatchOrder() {
    return "o.live_priority DESC, o.created_at, o.id";
  }

  @Override
  public String liveRows() {
    return "o.live_priority IS NOT NULL AND ";
  }

  @Override
  public String insert(String table) {
    // UTC_TIMESTAMP(6) is read when the statement starts, after the lock statement that precedes it
    return "INSERT INTO " + table + " (id, aggregate_type, aggregate_id, topic, payload, headers, priority,"
        + " created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))";
  }

  @Override
  public String lockAggregates(String lockTable, int keys) {
    // an upsert takes an exclusive row lock, held until the transaction ends
    return "INSERT INTO " + lockTable + " (lock_key) VALUES " + String.join(", ", java.util.Collections.nCopies(keys, "(?)"))
        + " ON DUPLICATE KEY UPDATE lock_key = lock_key";
  }
}
