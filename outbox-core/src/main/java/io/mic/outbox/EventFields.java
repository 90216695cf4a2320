package io.mic.outbox;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * The fields an application gives an event, shared by the two ways to build one: {@link OutboxEvent.Builder}
 * (a new event, validated) and {@link OutboxEvent.Stored} (an event read back by a store, with its state).
 * Each adds its own way to take headers and its own {@code build()}.
 */
abstract class EventFields<B extends EventFields<B>> {
  UUID id;
  String aggregateType;
  String aggregateId;
  String topic;
  String payload;
  final Map<String, String> headers = new LinkedHashMap<>();
  int priority;
  int schemaVersion = OutboxEvent.DEFAULT_SCHEMA_VERSION;
  Instant occurredAt;
  String traceParent;

  EventFields() {}

  @SuppressWarnings("unchecked")
  private B self() {
    return (B) this;
  }

  /** A fixed id, e.g. to make a business operation's event idempotent; by default a fresh UUIDv7. */
  public B id(UUID id) {
    this.id = id;
    return self();
  }

  /** The ordering key: events of one aggregate keep their order in ordered mode. */
  public B aggregate(String aggregateType, String aggregateId) {
    this.aggregateType = aggregateType;
    this.aggregateId = aggregateId;
    return self();
  }

  public B topic(String topic) {
    this.topic = topic;
    return self();
  }

  /** JSON text (object, array or scalar); it must parse as exactly one JSON value. */
  public B payload(String json) {
    this.payload = json;
    return self();
  }

  public B priority(int priority) {
    this.priority = priority;
    return self();
  }

  /** Version of the payload's schema, from 1 (the default); consumers choose their decoder by it. */
  public B schemaVersion(int schemaVersion) {
    this.schemaVersion = schemaVersion;
    return self();
  }

  /** When the business fact happened; by default the append time. */
  public B occurredAt(Instant occurredAt) {
    this.occurredAt = occurredAt;
    return self();
  }

  /** W3C {@code traceparent} of the appending code, so consumers continue its trace. */
  public B traceParent(String traceParent) {
    this.traceParent = traceParent;
    return self();
  }
}
