package io.mic.outbox.examples;

import io.mic.outbox.spring.TransactionalOutbox;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;

/**
 * The Spring Boot example of README.md, kept here (Spring is a test dependency of this module) so that it
 * compiles against the real API; {@code ReadmeExampleTest} keeps the README's copy equal to it. No
 * stereotype: no test context picks it up.
 */
record ReadmeSpringExample(JdbcTemplate jdbc, TransactionalOutbox outbox) {
  // README spring begin
  // application.properties: mic.outbox.rabbitmq.uri=amqp://guest:guest@127.0.0.1:5672
  //                         mic.outbox.rabbitmq.exchange=orders   (or mic.outbox.nats.url, mic.outbox.kafka.*)
  record OrderPlaced(String orderId, long total) {}

  @Transactional            // in a @Service; TransactionalOutbox and JdbcTemplate share the transaction
  public void placeOrder(String orderId, long total) {
    jdbc.update("INSERT INTO shop_order (id, total) VALUES (?, ?)", orderId, total);
    outbox.append("order", orderId, "order.placed", new OrderPlaced(orderId, total));  // JSON by Boot's Jackson
  }
  // README spring end
}
