package io.mic.outbox;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The payload schema versions a consumer understands, per topic: the highest version of each topic it can
 * read, and one for every other topic. The consumer helpers of the broker modules take it next to the
 * handler and never hand the handler a message whose {@link OutboxHeaders#SCHEMA_VERSION} is newer: such a
 * message is settled to be delivered again ({@link DeliveryOutcome#REDELIVERED}), neither applied nor
 * acknowledged, until a consumer that reads it is deployed. Immutable; {@link #topic} returns a copy.
 *
 * <pre>{@code
 * SchemaVersions accepts = SchemaVersions.upTo(1).topic("order.created", 2);
 * NatsConsumers.handle(msg, accepts, eventId -> inbox.runOnce("billing", eventId, tx -> bill(tx, msg)));
 * }</pre>
 *
 * <p>The topic is the name the message arrived under: the NATS subject, the RabbitMQ routing key, the Kafka
 * topic (each is the event's topic unless the publisher maps it).
 */
public final class SchemaVersions {
  /** Accepts every version: the guard of the helpers' overloads without one. */
  public static final SchemaVersions ANY = new SchemaVersions(Integer.MAX_VALUE, Map.of());

  private final int otherTopics;
  private final Map<String, Integer> byTopic;

  private SchemaVersions(int otherTopics, Map<String, Integer> byTopic) {
    this.otherTopics = otherTopics;
    this.byTopic = byTopic;
  }

  /**
   * Understands versions 1 to {@code version} of every topic not declared with {@link #topic}.
   *
   * @throws IllegalArgumentException if {@code version} is below 1
   */
  public static SchemaVersions upTo(int version) {
    return new SchemaVersions(require(version, "upTo"), Map.of());
  }

  /**
   * A copy that understands versions 1 to {@code version} of {@code topic} (replacing what was declared for it).
   *
   * @throws IllegalArgumentException if {@code topic} is blank or {@code version} is below 1
   */
  public SchemaVersions topic(String topic, int version) {
    Objects.requireNonNull(topic, "topic");
    if (topic.isBlank()) {
      throw new IllegalArgumentException("topic must not be blank: name the topic as the message arrives under it");
    }
    Map<String, Integer> copy = new HashMap<>(byTopic);
    copy.put(topic, require(version, "version of topic '" + topic + "'"));
    return new SchemaVersions(otherTopics, Map.copyOf(copy));
  }

  /** The highest version of {@code topic} understood. */
  public int highest(String topic) {
    return byTopic.getOrDefault(topic, otherTopics);
  }

  /** Whether a message of {@code topic} with schema version {@code version} may be applied. */
  public boolean accepts(String topic, int version) {
    return version <= highest(topic);
  }

  /**
   * The schema version a message carries, from the value of its {@link OutboxHeaders#SCHEMA_VERSION} header:
   * {@link OutboxEvent#DEFAULT_SCHEMA_VERSION} when absent (an event appended without one has that version).
   *
   * @throws OutboxException if the value is not a whole number of at least 1 (no MIC Outbox publisher writes it)
   */
  public static int versionOf(String header) {
    if (header == null) {
      return OutboxEvent.DEFAULT_SCHEMA_VERSION;
    }
    try {
      int version = Integer.parseInt(header.strip());
      if (version >= 1) {
        return version;
      }
    } catch (NumberFormatException e) {
      // said below
    }
    throw new OutboxException("header " + OutboxHeaders.SCHEMA_VERSION + " must be a whole number >= 1, was '"
        + (header.length() > 40 ? header.substring(0, 40) + "…" : header) + "'");
  }

  private static int require(int version, String what) {
    if (version < 1) {
      throw new IllegalArgumentException(what + " must be >= 1 (schema versions start at "
          + OutboxEvent.DEFAULT_SCHEMA_VERSION + "), was " + version);
    }
    return version;
  }

  @Override
  public String toString() {
    return "SchemaVersions{upTo=" + otherTopics + ", topics=" + byTopic + "}";
  }
}
