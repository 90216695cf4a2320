package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.jdbc.internal.HeadersJson;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/** Reads outbox rows selected as {@link Sql#COLUMNS}, in that order. */
final class EventRows {
  private EventRows() {}

  static List<OutboxEvent> readAll(PreparedStatement ps, Dialect dialect) throws SQLException {
    List<OutboxEvent> events = new ArrayList<>();
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        events.add(read(rs, dialect));
      }
    }
    return events;
  }

  static OutboxEvent read(ResultSet rs, Dialect dialect) throws SQLException {
    return OutboxEvent.stored() // a row appended under older rules must stay readable
        .id(dialect.getId(rs, 1))
        .aggregate(rs.getString(2), rs.getString(3))
        .topic(rs.getString(4))
        .payload(rs.getString(5))
        .headers(HeadersJson.read(rs.getString(6)))
        .priority(rs.getInt(7))
        .status(OutboxStatus.valueOf(rs.getString(8)))
        .attempts(rs.getInt(9))
        .nextAttemptAt(dialect.getInstant(rs, 10))
        .lease(rs.getString(11), dialect.getInstant(rs, 12))
        .createdAt(dialect.getInstant(rs, 13))
        .dispatchedAt(dialect.getInstant(rs, 14))
        .lastError(rs.getString(15))
        .sequence(rs.getLong(16))
        .schemaVersion(rs.getInt(17))
        .occurredAt(dialect.getInstant(rs, 18)) // null on rows appended before the envelope: createdAt then
        .traceParent(rs.getString(19))
        .build();
  }
}
