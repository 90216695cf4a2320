package io.mic.outbox.examples;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.spring.TransactionalOutbox;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

// docs/integrations.md 1 begin
@Service
public class ShopService {
  private final JdbcTemplate jdbc;
  private final TransactionalOutbox outbox;        // created by the outbox-spring auto-configuration

  public ShopService(JdbcTemplate jdbc, TransactionalOutbox outbox) {
    this.jdbc = jdbc;
    this.outbox = outbox;
  }

  @Transactional
  public void placeOrder(String orderId, long total) {
    jdbc.update("INSERT INTO shop_order (id, total) VALUES (?, ?)", orderId, total);
    outbox.append(OutboxEvent.builder()            // same connection, same transaction
        .aggregate("order", orderId).topic("order.placed")
        .payload("{\"total\":" + total + "}").build());
  }
}
// docs/integrations.md 1 end
