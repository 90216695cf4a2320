package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.jdbc.internal.HeadersJson;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Reads outbox rows selected as {@link Sql#COLUMNS}, in that order. */
final class EventRows {
  private static final Logger LOG = LoggerFactory.getLogger(EventRows.class);

  private EventRows() {}

  static List<OutboxEvent> readAll(PreparedStatement ps, Dialect dialect) throws SQLException {
    return readRows(ps, rs -> read(rs, dialect, false));
  }

  /**
   * {@link #readAll} for a read that hands its events to a dispatcher, on connection {@code c}: a row that
   * cannot become an event goes to the DLQ ({@link #deadLetter}) instead of failing the read, so that one row
   * cannot stop the outbox.
   */
  static List<OutboxEvent> readDue(Connection c, PreparedStatement ps, Dialect dialect, String table)
      throws SQLException {
    List<Unreadable> unreadable = new ArrayList<>();
    List<OutboxEvent> events = readRows(ps, rs -> readOrSetAside(rs, dialect, unreadable));
    deadLetter(c, table, dialect, unreadable);
    return events;
  }

  private static List<OutboxEvent> readRows(PreparedStatement ps, RowReader reader) throws SQLException {
    List<OutboxEvent> events = new ArrayList<>();
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        OutboxEvent event = reader.read(rs);
        if (event != null) {
          events.add(event);
        }
      }
    }
    return events;
  }

  @FunctionalInterface
  private interface RowReader {
    OutboxEvent read(ResultSet rs) throws SQLException;
  }

  /** {@link #read}, or {@code null} with the row added to {@code unreadable} when it cannot become an event. */
  static OutboxEvent readOrSetAside(ResultSet rs, Dialect dialect, List<Unreadable> unreadable) throws SQLException {
    try {
      return read(rs, dialect, false);
    } catch (OutboxException | IllegalArgumentException e) {
      unreadable.add(new Unreadable(dialect.getId(rs, 1), e.getMessage()));
      return null;
    }
  }

  /**
   * Moves the rows set aside to the DLQ, on the read's connection (and in its transaction, if it has one),
   * with the reason: written by hand or by a migration, they wait there for an operator to fix and redrive.
   */
  static void deadLetter(Connection c, String table, Dialect dialect, List<Unreadable> unreadable)
      throws SQLException {
    if (unreadable.isEmpty()) {
      return;
    }
    try (PreparedStatement ps = c.prepareStatement("UPDATE " + table + " SET status = 'DLQ', last_error = ?,"
        + " lease_owner = NULL, lease_until = NULL WHERE id = ? AND status IN ('PENDING', 'PROCESSING')")) {
      for (Unreadable row : unreadable) {
        ps.setString(1, "unreadable row: " + row.reason() + "; fix the row, then redrive the event");
        dialect.setId(ps, 2, row.id());
        ps.executeUpdate();
        LOG.warn("event {} in {} cannot be read ({}): moved to the DLQ; fix the row, then redrive it", row.id(),
            table, row.reason());
      }
    }
  }

  record Unreadable(UUID id, String reason) {}

  /**
   * {@link #readAll} for an operator's view ({@code find}, the DLQ list): a row whose headers cannot be read
   * shows without them, so the row an unreadable-row dead letter names can still be looked at.
   */
  static List<OutboxEvent> readAllForOperators(PreparedStatement ps, Dialect dialect) throws SQLException {
    return readRows(ps, rs -> read(rs, dialect, true));
  }

  private static OutboxEvent read(ResultSet rs, Dialect dialect, boolean unreadableHeadersAsNone)
      throws SQLException {
    Map<String, String> headers;
    try {
      headers = HeadersJson.read(rs.getString(6));
    } catch (OutboxException e) {
      if (!unreadableHeadersAsNone) {
        throw e;
      }
      headers = Map.of();
    }
    return OutboxEvent.stored() // a row appended under older rules must stay readable
        .id(dialect.getId(rs, 1))
        .aggregate(rs.getString(2), rs.getString(3))
        .topic(rs.getString(4))
        .payload(rs.getString(5))
        .headers(headers)
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
