package io.mic.outbox.examples;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.mic.outbox.spring.TransactionalOutbox;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;

/**
 * The Spring Boot example of README.md, kept here (Spring is a test dependency of this module) so that it
 * compiles against the real API; {@code ReadmeExampleTest} keeps the README's copy equal to it. No
 * stereotype: no test context picks it up.
 */
record ReadmeSpringExample(JdbcTemplate jdbc, TransactionalOutbox outbox) {
  // README spring begin
  @Bean                     // a DispatchFn bean: the auto-configured dispatcher publishes through it
  NatsJetStreamPublisher publisher() {
    return NatsJetStreamPublisher.builder().url("nats://127.0.0.1:4222").build();
  }
  @Transactional            // in a @Service; TransactionalOutbox and JdbcTemplate share the transaction
  public void placeOrder(String orderId, long total) {
    jdbc.update("INSERT INTO shop_order (id, total) VALUES (?, ?)", orderId, total);
    outbox.append(OutboxEvent.builder().aggregate("order", orderId)
        .topic("order.placed").payload("{\"total\":" + total + "}").build());
  }
  // README spring end
}
