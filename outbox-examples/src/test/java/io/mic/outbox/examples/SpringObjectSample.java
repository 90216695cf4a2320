package io.mic.outbox.examples;

import io.mic.outbox.spring.TransactionalOutbox;
import java.math.BigDecimal;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;

/**
 * The Spring Boot sample of docs/integrations.md with an object as the payload, compiled against the real API
 * ({@code AutoConfiguredOptionsTest} in outbox-spring runs the same on PostgreSQL). No stereotype: no test
 * context picks it up.
 */
final class SpringObjectSample {
  private SpringObjectSample() {}

  // docs/integrations.md 2 begin
  record OrderPlaced(String orderId, BigDecimal total) {}

  record OrderService(JdbcTemplate jdbc, TransactionalOutbox outbox) {   // a @Service
    @Transactional
    public void placeOrder(String orderId, BigDecimal total) {
      jdbc.update("INSERT INTO shop_order (id, total) VALUES (?, ?)", orderId, total);
      outbox.append("order", orderId, "order.placed", new OrderPlaced(orderId, total));   // JSON by Boot's Jackson
    }
  }
  // docs/integrations.md 2 end
}
