package io.mic.outbox.examples;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.InboxEffect;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.ResultSet;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A consumer that is also a producer: billing consumes {@code order.created} through its inbox and, in the same
 * transaction, writes the invoice and appends {@code invoice.issued} to its own outbox. The inbox record, the
 * invoice and the downstream event commit together or not at all, so a redelivered message is applied once and
 * emits one event, and a failure before the commit emits none.
 *
 * <p>An order that can never be invoiced (a payload it cannot read, an amount that is not positive) is not
 * retried for ever: billing parks it, emits {@code invoice.rejected} through the same outbox so the order side
 * can compensate, and counts it for an alert, again in the inbox's transaction. Any other failure (the database
 * unavailable) rolls back and is thrown, so the broker delivers the message again.
 *
 * <p>Its tables live in billing's database beside the inbox and the outbox; the names are given so tests can
 * use their own.
 */
final class BillingService {
  static final String CONSUMER = "billing";

  private static final Logger log = LoggerFactory.getLogger(BillingService.class);

  private final DataSource dataSource;
  private final JdbcInbox inbox;
  private final JdbcOutboxStore outbox;
  private final String invoices;
  private final String parked;

  BillingService(DataSource dataSource, JdbcInbox inbox, JdbcOutboxStore outbox, String invoices, String parked) {
    this.dataSource = dataSource;
    this.inbox = inbox;
    this.outbox = outbox;
    this.invoices = invoices;
    this.parked = parked;
  }

  /** Creates billing's tables: the inbox, its own outbox, invoices and parked messages (PostgreSQL). */
  void createSchema() throws SQLException {
    inbox.createSchema();
    outbox.createSchema();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS " + invoices + " (event_id varchar(255) PRIMARY KEY,"
          + " order_id varchar(255) NOT NULL, amount_cents bigint NOT NULL)");
      s.execute("CREATE TABLE IF NOT EXISTS " + parked + " (event_id varchar(255) PRIMARY KEY,"
          + " reason varchar(255) NOT NULL, parked_at timestamptz NOT NULL DEFAULT now())");
    }
  }

  /**
   * Handles one {@code order.created} message.
   *
   * @return {@code true} if it was applied now (invoiced or parked), {@code false} for a duplicate
   * @throws RuntimeException if the effect failed: nothing was committed, let the broker deliver it again
   */
  // docs/consumers.md 1 begin
  boolean onOrderCreated(String eventId, String payload) {     // true: applied now, false: a duplicate
    return inbox.runOnce("billing", eventId, effectOf(eventId, payload));  // one transaction for it all
  }

  private void issue(Connection tx, String eventId, OrderCreated order) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(
        "INSERT INTO " + invoices + " (order_id, amount_cents, event_id) VALUES (?, ?, ?)")) {
      ps.setString(1, order.orderId());                             // 1. the effect
      ps.setLong(2, order.amountCents());
      ps.setString(3, eventId);
      ps.executeUpdate();
    }
    outbox.append(tx, OutboxEvent.builder()                         // 2. billing's own outbox, same transaction
        .aggregate("invoice", order.orderId()).topic("invoice.issued")
        .payload("{\"orderId\":" + json(order.orderId()) + ",\"amountCents\":" + order.amountCents() + "}")
        .build());
  }
  // docs/consumers.md 1 end

  /** The effect of one message, for {@link JdbcInbox#runOnce}; it writes only through {@code tx}. */
  InboxEffect effectOf(String eventId, String payload) {
    return tx -> {
      OrderCreated order;
      try {
        order = OrderCreated.parse(payload);
      } catch (IllegalArgumentException e) {
        park(tx, eventId, null, e.getMessage());
        return;
      }
      if (order.amountCents() <= 0) {
        park(tx, eventId, order, "amountCents must be > 0, was " + order.amountCents());
        return;
      }
      issue(tx, eventId, order);
    };
  }

  // docs/consumers.md 3 begin
  private void park(Connection tx, String eventId, OrderCreated order, String reason) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(                     // 1. park: kept for a person to look at
        "INSERT INTO " + parked + " (event_id, reason) VALUES (?, ?)")) {
      ps.setString(1, eventId);
      ps.setString(2, reason);
      ps.executeUpdate();
    }
    String orderId = order == null ? "unknown" : order.orderId();
    outbox.append(tx, OutboxEvent.builder()                              // 2. compensate: the order side cancels
        .aggregate("invoice", orderId).topic("invoice.rejected")
        .payload("{\"orderId\":" + json(orderId) + ",\"eventId\":" + json(eventId) + "}")
        .build());
    log.warn("billing parks event {}: {}", eventId, reason);            // 3. alert: see parkedMessages()
  }
  // docs/consumers.md 3 end

  /** {@code value} as a JSON string literal. */
  private static String json(String value) {
    return '"' + new String(JsonStringEncoder.getInstance().quoteAsString(value)) + '"';
  }

  /** The parked messages: a gauge for the alert (alert when it grows), read from the committed rows. */
  long parkedMessages() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + parked)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
