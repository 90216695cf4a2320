package io.mic.outbox.spring;

import com.rabbitmq.client.Channel;
import io.mic.outbox.DeliveryHandler;
import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.SchemaVersions;
import io.mic.outbox.spi.Deliveries;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import org.springframework.amqp.core.Message;

/**
 * The inbox behind a Spring AMQP {@code @RabbitListener} with manual acknowledgements: reads the event id from
 * the message, runs the handler (typically {@code JdbcInbox.runOnce}) and acknowledges by the outcome, as
 * {@code RabbitMqConsumers} does for a plain {@code amqp-client} consumer. Needs {@code spring-rabbit}.
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
    Objects.requireNonNull(message, "message");
    Map<String, Object> headers = message.getMessageProperties().getHeaders();
    String key = OutboxHeaders.idempotencyKey(name -> text(headers.get(name)));
    String routingKey = message.getMessageProperties().getReceivedRoutingKey();
    if (key == null || key.isBlank()) {
      throw new OutboxException("the message with routing key " + routingKey + " carries no event id: expected"
          + " header " + OutboxHeaders.EVENT_ID + " (live) or " + OutboxHeaders.ORIGINAL_EVENT_ID + " (replay);"
          + " headers present: " + new TreeSet<>(headers.keySet()));
    }
    String problem = OutboxHeaders.keyProblem("its event id", key);
    if (problem != null) {
      throw new OutboxException("the message with routing key " + routingKey + " carries an event id no inbox can"
          + " keep: " + problem);
    }
    return key;
  }

  private static String text(Object value) {
    if (value instanceof byte[] bytes) {
      return new String(bytes, StandardCharsets.UTF_8);
    }
    return value == null ? null : value.toString();
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
    Objects.requireNonNull(channel, "channel");
    Objects.requireNonNull(accepts, "accepts");
    Objects.requireNonNull(handler, "handler");
    long tag = message.getMessageProperties().getDeliveryTag();
    String routingKey = message.getMessageProperties().getReceivedRoutingKey();
    DeliveryOutcome outcome;
    try {
      String key = idempotencyKey(message);
      outcome = Deliveries.attempt(handler, key, "routing key " + routingKey, accepts, routingKey,
          text(message.getMessageProperties().getHeaders().get(OutboxHeaders.SCHEMA_VERSION)));
    } catch (OutboxException e) {
      outcome = Deliveries.rejected(e.getMessage());
    }
    switch (outcome) {
      case REDELIVERED -> channel.basicNack(tag, false, true);
      case REJECTED -> channel.basicNack(tag, false, false);
      default -> channel.basicAck(tag, false);
    }
    return outcome;
  }
}
