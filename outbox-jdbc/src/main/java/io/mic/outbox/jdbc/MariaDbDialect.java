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
 * column whose index holds live rows only, so {@code SKIP LOCKED} locks just the rows it returns. Its
 * statements: {@link LockingClaim}, {@link LockingMarks}, {@link MariaDbAppend} and
 * {@code InboxStatements.MariaDb}.
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
  public String microsSince(String ts) {
    return "TIMESTAMPDIFF(MICROSECOND, " + ts + ", UTC_TIMESTAMP(6))";
  }

  @Override
  public void setInstant(PreparedStatement ps, int index, Instant instant) throws SQLException {
    if (instant == null) {
      ps.setNull(index, java.sql.Types.TIMESTAMP);
    } else {
      ps.setObject(index, LocalDateTime.ofInstant(instant, ZoneOffset.UTC));
    }
  }

  @Override
  public String timestampText(String ts) {
    return "DATE_FORMAT(" + ts + ", '%Y-%m-%dT%H:%i:%s.%fZ')";
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
}
