package io.mic.outbox;

import java.time.Instant;
import java.util.Map;

/**
 * One message for a broker, whichever broker: built by {@link OutboxHeaders#messageOf} for a live event and by
 * the replay for an archived one, and sent by a {@link MessagePublisher}.
 *
 * <pre>{@code
 * OutgoingMessage m = OutboxHeaders.messageOf(event);
 * m.destination();      // the topic: a NATS subject, a RabbitMQ routing key, a Kafka topic
 * m.deduplicationId();  // the event id; "<original-id>:replay:<batch-id>" for a replay
 * }</pre>
 *
 * @param destination the topic; a publisher may prefix or map it (a NATS subject prefix)
 * @param key what orders messages on the broker (the Kafka record key); {@code null} for none
 * @param headers every header, envelope included, in the order they are sent
 * @param payload the JSON text as UTF-8
 * @param deduplicationId what the broker deduplicates on ({@code Nats-Msg-Id}, RabbitMQ {@code message_id})
 * @param createdAt when the event was appended (RabbitMQ's {@code timestamp}); {@code null} when not known
 */
public record OutgoingMessage(String destination, String key, Map<String, String> headers, byte[] payload,
    String deduplicationId, Instant createdAt) {

  /** The id a consumer deduplicates on: the original event's id for a replay ({@link OutboxHeaders#idempotencyKey}). */
  public String eventId() {
    return OutboxHeaders.idempotencyKey(headers::get);
  }
}
