package io.mic.outbox.examples;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * The business side: each method changes the {@code orders} table and appends its event to the outbox in
 * the same transaction, so either both happen or neither does.
 */
final class OrderService {
  private final DataSource dataSource;
  private final JdbcOutboxStore outbox;

  OrderService(DataSource dataSource, JdbcOutboxStore outbox) {
    this.dataSource = dataSource;
    this.outbox = outbox;
  }

  void createSchema() throws SQLException {
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
        "CREATE TABLE IF NOT EXISTS mic_demo_orders (id VARCHAR(64) PRIMARY KEY, amount DECIMAL(12, 2) NOT NULL,"
            + " status VARCHAR(16) NOT NULL)")) {
      ps.execute();
    }
  }

  void placeOrder(String orderId, BigDecimal amount) throws SQLException {
    inTransaction(c -> {
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO mic_demo_orders (id, amount, status) VALUES (?, ?, 'PLACED')")) {
        ps.setString(1, orderId);
        ps.setBigDecimal(2, amount);
        ps.executeUpdate();
      }
      outbox.append(c, event(orderId, "order.placed", "{\"orderId\":\"" + orderId + "\",\"amount\":" + amount + "}"));
    });
  }

  void payOrder(String orderId) throws SQLException {
    inTransaction(c -> {
      try (PreparedStatement ps = c.prepareStatement("UPDATE mic_demo_orders SET status = 'PAID' WHERE id = ?")) {
        ps.setString(1, orderId);
        ps.executeUpdate();
      }
      outbox.append(c, event(orderId, "order.paid", "{\"orderId\":\"" + orderId + "\"}"));
    });
  }

  /** Writes the order and its event, then fails before commit: neither may ever be seen. */
  void placeOrderThatFails(String orderId, BigDecimal amount) throws SQLException {
    try {
      inTransaction(c -> {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO mic_demo_orders (id, amount, status) VALUES (?, ?, 'PLACED')")) {
          ps.setString(1, orderId);
          ps.setBigDecimal(2, amount);
          ps.executeUpdate();
        }
        outbox.append(c, event(orderId, "order.placed", "{\"orderId\":\"" + orderId + "\",\"amount\":" + amount + "}"));
        throw new IllegalStateException("payment provider declined the card");
      });
    } catch (IllegalStateException expected) {
      // the transaction rolled back: the order row and its event are gone together
    }
  }

  int countOrders() throws SQLException {
    try (Connection c = dataSource.getConnection();
        var rs = c.createStatement().executeQuery("SELECT COUNT(*) FROM mic_demo_orders")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static OutboxEvent event(String orderId, String topic, String payload) {
    return OutboxEvent.builder().aggregate("order", orderId).topic(topic).payload(payload)
        .header("source", "outbox-demo").build();
  }

  private void inTransaction(TransactionBody body) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        body.run(c);
        c.commit();
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    }
  }

  @FunctionalInterface
  private interface TransactionBody {
    void run(Connection c) throws SQLException;
  }
}
