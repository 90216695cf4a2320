package io.mic.outbox.examples;

import com.rabbitmq.client.Channel;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.spring.SpringKafkaConsumers;
import io.mic.outbox.spring.SpringRabbitConsumers;
import java.io.IOException;
import java.sql.Connection;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.Acknowledgment;

/**
 * The listener-container recipe of docs/integrations.md, compiled against the real API
 * ({@code ListenerContainersTest} in outbox-spring runs the same on RabbitMQ, Kafka and PostgreSQL). No
 * stereotype: no test context picks it up.
 */
final class SpringListenerSample {
  private final JdbcInbox inbox;

  SpringListenerSample(JdbcInbox inbox) {
    this.inbox = inbox;
  }

  // docs/integrations.md 3 begin
  @RabbitListener(queues = "billing", ackMode = "MANUAL")
  void onOrder(Message message, Channel channel) throws IOException {
    SpringRabbitConsumers.handle(message, channel, eventId ->       // ack, or nack with requeue if it threw
        inbox.runOnce("billing", eventId, tx -> createInvoice(tx, message.getBody())));
  }

  @KafkaListener(topics = "order.created", groupId = "billing")      // spring.kafka.listener.ack-mode=manual
  void onOrder(ConsumerRecord<String, byte[]> record, Acknowledgment ack) {
    SpringKafkaConsumers.handle(record, ack, eventId ->              // acknowledge, or nack: polled again
        inbox.runOnce("billing", eventId, tx -> createInvoice(tx, record.value())));
  }
  // docs/integrations.md 3 end

  private static void createInvoice(Connection tx, byte[] body) {
    // the consumer's business effect, written with tx
  }
}
