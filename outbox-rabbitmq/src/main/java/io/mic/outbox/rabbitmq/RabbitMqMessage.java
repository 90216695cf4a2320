package io.mic.outbox.rabbitmq;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A message published as it is, for tools that republish rather than dispatch outbox events (the replay
 * command): {@link RabbitMqPublisher#publishInOrder} sends it with the same confirms, {@code mandatory} flag,
 * persistence and content type as an event.
 *
 * <pre>{@code
 * RabbitMqMessage m = new RabbitMqMessage("order.created", "0190a1b2-…:replay:rebuild-1",
 *     Map.of("x-replay", "true"), "{\"orderId\":42}".getBytes(UTF_8), Instant.parse("2026-09-29T08:00:00Z"));
 * }</pre>
 *
 * @param routingKey at most 255 bytes of UTF-8
 * @param messageId the AMQP {@code message_id}, at most 255 bytes of UTF-8
 * @param headers sent as AMQP string headers, in this order
 * @param body the JSON text as UTF-8
 * @param timestamp the AMQP {@code timestamp} (whole seconds on the wire), or {@code null} for none
 */
public record RabbitMqMessage(String routingKey, String messageId, Map<String, String> headers, byte[] body,
    Instant timestamp) {

  public RabbitMqMessage {
    Objects.requireNonNull(routingKey, "routingKey");
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(body, "body");
    headers = headers == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(headers));
  }

  /** Ids and sizes only: bodies may hold personal data and never reach logs. */
  @Override
  public String toString() {
    return "RabbitMqMessage{routingKey=" + routingKey + ", messageId=" + messageId + ", body=" + body.length
        + " bytes}";
  }
}
