package io.mic.outbox.examples;

import io.mic.outbox.jdbc.JdbcInbox;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * A consumer that stays idempotent with the inbox: it records the event id and applies its effect in one
 * transaction, so a message delivered twice is applied once.
 */
final class BillingConsumer {
  static final String NAME = "billing";

  private final DataSource dataSource;
  private final JdbcInbox inbox;
  private final AtomicInteger applied = new AtomicInteger();
  private final AtomicInteger duplicates = new AtomicInteger();

  BillingConsumer(DataSource dataSource, JdbcInbox inbox) {
    this.dataSource = dataSource;
    this.inbox = inbox;
  }

  void createSchema() throws SQLException {
    inbox.createSchema();
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
        "CREATE TABLE IF NOT EXISTS mic_demo_invoices (order_id VARCHAR(64) NOT NULL, kind VARCHAR(16) NOT NULL,"
            + " event_id VARCHAR(64) NOT NULL)")) {
      ps.execute();
    }
  }

  /** @return whether the effect was applied; {@code false} for a duplicate the inbox absorbed */
  boolean onMessage(Bus.Message message) {
    String eventId = message.headers().get("x-event-id");
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        if (!inbox.tryRecord(c, NAME, eventId)) {
          duplicates.incrementAndGet();
          c.rollback();
          return false;
        }
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO mic_demo_invoices (order_id, kind, event_id) VALUES (?, ?, ?)")) {
          ps.setString(1, message.headers().get("x-aggregate-id"));
          ps.setString(2, message.topic().equals("order.paid") ? "PAYMENT" : "INVOICE");
          ps.setString(3, eventId);
          ps.executeUpdate();
        }
        c.commit();
        applied.incrementAndGet();
        return true;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw new IllegalStateException("billing could not record event " + eventId, e);
    }
  }

  int applied() {
    return applied.get();
  }

  int duplicates() {
    return duplicates.get();
  }

  int invoiceRows() throws SQLException {
    try (Connection c = dataSource.getConnection();
        var rs = c.createStatement().executeQuery("SELECT COUNT(*) FROM mic_demo_invoices")) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
