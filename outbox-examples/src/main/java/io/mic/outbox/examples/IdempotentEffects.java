package io.mic.outbox.examples;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * Effects that need no inbox, because applying them again changes nothing (PostgreSQL syntax): a row keyed by
 * the event id, and a state that only moves forward with the aggregate's sequence. Each is one statement, so
 * it runs in auto-commit mode as well as inside a transaction.
 */
final class IdempotentEffects {
  private IdempotentEffects() {}

  // docs/consumers.md 2 begin
  // a row per event, keyed by the event id: the effect's table is its own inbox
  static boolean recordPayment(Connection c, String eventId, String orderId, long amountCents) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO payment (event_id, order_id, amount_cents)"
        + " VALUES (?, ?, ?) ON CONFLICT (event_id) DO NOTHING")) {
      ps.setString(1, eventId);
      ps.setString(2, orderId);
      ps.setLong(3, amountCents);
      return ps.executeUpdate() == 1;           // false: a duplicate, nothing written
    }
  }

  // a state keyed by the aggregate, moved by x-sequence (JdbcInbox.sequenceOf): a late duplicate loses
  static boolean projectStatus(Connection c, String orderId, String status, long sequence) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO order_status (order_id, status, sequence)"
        + " VALUES (?, ?, ?) ON CONFLICT (order_id) DO UPDATE SET status = EXCLUDED.status,"
        + " sequence = EXCLUDED.sequence WHERE order_status.sequence < EXCLUDED.sequence")) {
      ps.setString(1, orderId);
      ps.setString(2, status);
      ps.setLong(3, sequence);
      return ps.executeUpdate() == 1;           // false: this sequence or a newer one is already there
    }
  }
  // docs/consumers.md 2 end
}
