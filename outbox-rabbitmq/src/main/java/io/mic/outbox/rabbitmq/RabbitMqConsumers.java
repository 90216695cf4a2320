package io.mic.outbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Delivery;
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

/**
 * The consumer side on RabbitMQ: the idempotency key of a delivery, and the usual acknowledgement policy
 * around an idempotent effect such as {@code JdbcInbox.runOnce} (the channel consumes with manual acks).
 *
 * <pre>{@code
 * channel.basicConsume(queue, false, (tag, delivery) -> RabbitMqConsumers.handle(channel, delivery,
 *     eventId -> inbox.runOnce("billing", eventId, tx -> createInvoice(tx, delivery))), tag -> { });
 * // never throws the effect's failure: the delivery is requeued and the channel goes on consuming
 * }</pre>
 */
public final class RabbitMqConsumers {
  private RabbitMqConsumers() {}

  /**
   * The id to deduplicate on: header {@code x-original-event-id} for a replay, else {@code x-event-id}
   * (AMQP long strings and byte arrays read as UTF-8 text).
   *
   * @throws OutboxException if the delivery carries neither header (it was not published by MIC Outbox), or
   *     an id no inbox can keep ({@link OutboxHeaders#keyProblem})
   */
  public static String idempotencyKey(Delivery delivery) {
    Objects.requireNonNull(delivery, "delivery");
    AMQP.BasicProperties properties = delivery.getProperties();
    Map<String, Object> headers = properties == null ? null : properties.getHeaders();
    String key = headers == null ? null : OutboxHeaders.idempotencyKey(name -> text(headers.get(name)));
    if (key == null || key.isBlank()) {
      throw new OutboxException("the delivery with routing key " + delivery.getEnvelope().getRoutingKey()
          + " carries no event id: expected header " + OutboxHeaders.EVENT_ID + " (live) or "
          + OutboxHeaders.ORIGINAL_EVENT_ID + " (replay); headers present: "
          + (headers == null ? "none" : new TreeSet<>(headers.keySet())));
    }
    String problem = OutboxHeaders.keyProblem("its event id", key);
    if (problem != null) {
      throw new OutboxException("the delivery with routing key " + delivery.getEnvelope().getRoutingKey()
          + " carries an event id no inbox can keep: " + problem);
    }
    return key;
  }

  /**
   * A header value as text: a long string (how AMQP carries strings) and a byte array (how some publishers
   * send them) as UTF-8. A byte array's own {@code toString} would differ on every delivery, and a redelivery
   * would not be recognised as a duplicate.
   */
  private static String text(Object value) {
    if (value instanceof byte[] bytes) {
      return new String(bytes, StandardCharsets.UTF_8);
    }
    return value == null ? null : value.toString(); // a LongString's toString is its UTF-8 text
  }

  /**
   * Runs {@code handler} with the delivery's idempotency key and settles the delivery on {@code channel} by the
   * outcome, which it returns: applied or duplicate: {@code basicAck}; the handler threw:
   * {@code basicNack} with requeue, so the broker delivers it again, and the failure is logged at WARN; no
   * event id, or one no inbox can keep: {@code basicNack} without requeue (to the queue's dead-letter exchange,
   * if it has one), since no redelivery can fix that. It never throws the handler's failure, so it is safe as
   * the whole body of a {@code DeliverCallback}: one that throws makes {@code amqp-client} close the channel,
   * and its consumer with it. A classic queue delivers a requeued message again at once, ahead of the rest,
   * however often its handler fails; a quorum queue with {@code x-delivery-limit} and a dead-letter exchange
   * moves it aside after that many.
   *
   * @throws IOException if the channel cannot send the acknowledgement (it is closed: the broker delivers the
   *     message again to another consumer)
   */
  public static DeliveryOutcome handle(Channel channel, Delivery delivery, DeliveryHandler handler)
      throws IOException {
    return handle(channel, delivery, SchemaVersions.ANY, handler);
  }

  /**
   * As {@link #handle(Channel, Delivery, DeliveryHandler)}, for a consumer that reads the schema versions
   * {@code accepts} declares for the delivery's routing key: a delivery with a newer {@code x-schema-version}
   * never reaches the handler; it is nack-ed with requeue ({@link DeliveryOutcome#REDELIVERED}) and a WARN
   * names the fix, so it is applied once a consumer that reads it is deployed. A classic queue hands it back at
   * once: pause its topic at the producer ({@code mic-outbox pause --topic}) if that consumer is not deployed
   * soon.
   *
   * @throws IOException if the channel cannot send the acknowledgement
   */
  public static DeliveryOutcome handle(Channel channel, Delivery delivery, SchemaVersions accepts,
      DeliveryHandler handler) throws IOException {
    Objects.requireNonNull(channel, "channel");
    Objects.requireNonNull(accepts, "accepts");
    Objects.requireNonNull(handler, "handler");
    long tag = delivery.getEnvelope().getDeliveryTag();
    String routingKey = delivery.getEnvelope().getRoutingKey();
    DeliveryOutcome outcome;
    try {
      String key = idempotencyKey(delivery);
      outcome = Deliveries.attempt(handler, key, "routing key " + routingKey, accepts, routingKey,
          text(delivery.getProperties().getHeaders().get(OutboxHeaders.SCHEMA_VERSION)));
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
