package io.mic.outbox.spring;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.Envelope;
import io.mic.outbox.DeliveryHandler;
import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.OutboxException;
import io.mic.outbox.SchemaVersions;
import io.mic.outbox.rabbitmq.RabbitMqConsumers;
import java.io.IOException;
import java.util.Objects;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;

/**
 * The inbox behind a Spring AMQP {@code @RabbitListener} with manual acknowledgements: reads the event id from
 * the message, runs the handler (typically {@code JdbcInbox.runOnce}) and acknowledges by the outcome, exactly as
 * {@link RabbitMqConsumers} does for a plain {@code amqp-client} consumer (this class hands it the message).
 * Needs {@code spring-rabbit} and {@code outbox-rabbitmq}.
 *
 * <pre>{@code
 * @RabbitListener(queues = "billing", ackMode = "MANUAL")
 * void onOrder(Message message, Channel channel) throws IOException {
 *   SpringRabbitConsumers.handle(message, channel, eventId ->
 *       inbox.runOnce("billing", eventId, tx -> createInvoice(tx, message.getBody())));
 * }
 * }</pre>
 */
public final class SpringRabbitConsumers {
  private SpringRabbitConsumers() {}

  /**
   * The id to deduplicate on: header {@code x-original-event-id} for a replay, else {@code x-event-id}.
   *
   * @throws OutboxException if the message carries neither, or an id no inbox can keep
   */
  public static String idempotencyKey(Message message) {
    return RabbitMqConsumers.idempotencyKey(delivery(message));
  }

  /**
   * Runs {@code handler} with the message's idempotency key and settles it on {@code channel} (the listener's
   * {@code ackMode = "MANUAL"}): applied or duplicate: {@code basicAck}; the handler threw: {@code basicNack}
   * with requeue and a WARN; no event id, or one no inbox can keep: {@code basicNack} without requeue (to the
   * queue's dead-letter exchange, if any). It never throws the handler's failure.
   *
   * @throws IOException if the channel cannot send the acknowledgement
   */
  public static DeliveryOutcome handle(Message message, Channel channel, DeliveryHandler handler) throws IOException {
    return handle(message, channel, SchemaVersions.ANY, handler);
  }

  /**
   * As {@link #handle(Message, Channel, DeliveryHandler)}, for a listener that reads the schema versions
   * {@code accepts} declares for the message's routing key: a message with a newer {@code x-schema-version}
   * never reaches the handler; it is nack-ed with requeue like a failure and a WARN names the fix, so it is
   * applied once a consumer that reads it is deployed.
   *
   * @throws IOException if the channel cannot send the acknowledgement
   */
  public static DeliveryOutcome handle(Message message, Channel channel, SchemaVersions accepts,
      DeliveryHandler handler) throws IOException {
    return RabbitMqConsumers.handle(channel, delivery(message), accepts, handler);
  }

  /** The message as {@code amqp-client} delivers it: its tag, routing key and headers (the body is not read). */
  private static Delivery delivery(Message message) {
    MessageProperties p = Objects.requireNonNull(message, "message").getMessageProperties();
    Envelope envelope = new Envelope(p.getDeliveryTag(), Boolean.TRUE.equals(p.getRedelivered()),
        p.getReceivedExchange(), p.getReceivedRoutingKey());
    return new Delivery(envelope, new AMQP.BasicProperties.Builder().headers(p.getHeaders()).build(), null);
  }
}
