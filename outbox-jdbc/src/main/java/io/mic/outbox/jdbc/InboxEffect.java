package io.mic.outbox.jdbc;

import java.sql.Connection;

/**
 * The business effect of one message, applied by {@link JdbcInbox#runOnce} in the transaction that records
 * the message: both commit or neither does.
 *
 * <pre>{@code
 * InboxEffect createInvoice = connection -> {
 *   try (PreparedStatement ps = connection.prepareStatement("INSERT INTO invoice (order_id) VALUES (?)")) {
 *     ps.setString(1, orderId);
 *     ps.executeUpdate();
 *   }
 * };
 * }</pre>
 */
@FunctionalInterface
public interface InboxEffect {

  /**
   * Applies the effect with {@code connection}, inside the inbox's transaction. Must not commit, roll back
   * or close it; throw to roll everything back, the inbox record included.
   */
  void apply(Connection connection) throws Exception;
}
