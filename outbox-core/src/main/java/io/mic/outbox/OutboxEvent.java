package io.mic.outbox;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;

/**
 * One message to publish, written to the outbox in the same transaction as the business change.
 * Immutable; validated when built, so an invalid event never reaches a store.
 *
 * <pre>{@code
 * OutboxEvent event = OutboxEvent.builder()
 *     .aggregate("order", "42")
 *     .topic("order.created")
 *     .payload("{\"orderId\":42}")
 *     .header("tenant", "acme")
 *     .build();
 * }</pre>
 *
 * <p>The id is a time-ordered UUID (version 7) unless one is given. {@link #createdAt()}, {@link #status()}
 * and the other state accessors describe the stored row: a store sets them; a freshly built event is
 * {@code PENDING} with no attempts and no {@code createdAt} yet.
 */
public final class OutboxEvent {

  /**
   * Largest message a broker is assumed to take, payload and headers together, in bytes: 1 MiB, the
   * default {@code max_payload} of a NATS server.
   */
  public static final int MAX_MESSAGE_BYTES = 1024 * 1024;
  /**
   * Room kept in every message for the headers a publisher adds (event id, aggregate, message id, replay
   * and envelope headers), in bytes.
   */
  public static final int PUBLISHER_HEADER_BYTES = 4096;
  /**
   * Largest payload accepted, in UTF-8 bytes, for an event without headers: {@link #MAX_MESSAGE_BYTES}
   * less {@link #PUBLISHER_HEADER_BYTES}. The event's own headers count against it as they travel
   * ({@code name: value} and a line break each), so payload and headers never exceed a message.
   */
  public static final int MAX_PAYLOAD_BYTES = MAX_MESSAGE_BYTES - PUBLISHER_HEADER_BYTES;
  /** Largest total of an event's headers as they travel ({@code name: value} and a line break each), in bytes. */
  public static final int MAX_HEADERS_BYTES = 64 * 1024;
  /** Longest aggregate type, aggregate id or topic, in characters. */
  public static final int MAX_NAME_LENGTH = 255;
  /** Longest header name, in characters. */
  public static final int MAX_HEADER_NAME_LENGTH = 128;
  /** Longest header value, in characters. */
  public static final int MAX_HEADER_VALUE_LENGTH = 4096;

  /**
   * Header names the publishers set themselves on every message; an event may not carry them, or a
   * consumer could not trust them. Names starting with {@code Nats-} (any case) are refused as well:
   * JetStream acts on them (expected stream, rollup, deduplication).
   */
  public static final Set<String> RESERVED_HEADERS = EventRules.reservedHeaders();
  /** The version of a payload's schema when the builder sets none. */
  public static final int DEFAULT_SCHEMA_VERSION = 1;

  private final UUID id;
  private final String aggregateType;
  private final String aggregateId;
  private final String topic;
  private final String payload;
  private final Map<String, String> headers;
  private final int priority;
  private final Instant createdAt;
  private final OutboxStatus status;
  private final int attempts;
  private final Instant nextAttemptAt;
  private final String lastError;
  private final String leaseOwner;
  private final Instant leaseUntil;
  private final Instant dispatchedAt;
  private final long sequence;
  private final int schemaVersion;
  private final Instant occurredAt;
  private final String traceParent;

  private OutboxEvent(Stored b) {
    this.id = Objects.requireNonNull(b.id, "id");
    this.aggregateType = Objects.requireNonNull(b.aggregateType, "aggregateType");
    this.aggregateId = Objects.requireNonNull(b.aggregateId, "aggregateId");
    this.topic = Objects.requireNonNull(b.topic, "topic");
    this.payload = Objects.requireNonNull(b.payload, "payload");
    this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(b.headers));
    this.priority = b.priority;
    this.createdAt = b.createdAt;
    this.status = Objects.requireNonNull(b.status, "status");
    this.attempts = b.attempts;
    this.nextAttemptAt = b.nextAttemptAt;
    this.lastError = b.lastError;
    this.leaseOwner = b.leaseOwner;
    this.leaseUntil = b.leaseUntil;
    this.dispatchedAt = b.dispatchedAt;
    this.sequence = b.sequence;
    this.schemaVersion = b.schemaVersion;
    this.occurredAt = b.occurredAt;
    this.traceParent = b.traceParent;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * For {@link OutboxStore} implementations: rebuilds an event read back from storage, with its stored
   * state. Only the presence of the required fields is checked: the append-time rules held when the event
   * was appended, and a row appended under older rules must stay readable, or the store could neither
   * dispatch nor dead-letter it. Applications build events with {@link #builder()}.
   */
  public static Stored stored() {
    return new Stored();
  }

  /** {@link #stored()} holding every field of this event, to derive a copy with another state. */
  public Stored toStored() {
    return new Stored()
        .id(id).aggregate(aggregateType, aggregateId).topic(topic).payload(payload).priority(priority)
        .createdAt(createdAt).status(status).attempts(attempts).nextAttemptAt(nextAttemptAt)
        .lastError(lastError).lease(leaseOwner, leaseUntil).dispatchedAt(dispatchedAt)
        .sequence(sequence).schemaVersion(schemaVersion).occurredAt(occurredAt).traceParent(traceParent)
        .headers(headers);
  }

  public UUID id() { return id; }

  public String aggregateType() { return aggregateType; }

  public String aggregateId() { return aggregateId; }

  public String topic() { return topic; }

  /** The JSON text, exactly as appended. */
  public String payload() { return payload; }

  /** Unmodifiable, in insertion order. */
  public Map<String, String> headers() { return headers; }

  /** Higher is dispatched first; never lets an event overtake its own aggregate's head in ordered mode. */
  public int priority() { return priority; }

  /** When the store accepted the event, by the store's clock; {@code null} before it is appended. */
  public Instant createdAt() { return createdAt; }

  public OutboxStatus status() { return status; }

  /** Publication attempts so far. In claim mode an attempt is counted when the event is claimed. */
  public int attempts() { return attempts; }

  /** Not to be dispatched before this instant; {@code null} means as soon as possible. */
  public Instant nextAttemptAt() { return nextAttemptAt; }

  /** The error of the last failed attempt, or {@code null}. */
  public String lastError() { return lastError; }

  /**
   * The claim that holds this event while it is {@code PROCESSING} (it fences every later mark), or, once
   * {@code DISPATCHED}, the claim that dispatched it; {@code null} otherwise.
   */
  public String leaseOwner() { return leaseOwner; }

  /** When the current lease expires; after that another worker may claim the event. */
  public Instant leaseUntil() { return leaseUntil; }

  /** When the event was marked {@code DISPATCHED}, or {@code null}. */
  public Instant dispatchedAt() { return dispatchedAt; }

  /**
   * Position in its aggregate, 1, 2, 3 … in commit order, gap-free among committed events; assigned by
   * the store at append, 0 before (and in stores that assign none).
   */
  public long sequence() { return sequence; }

  /** Version of the payload's schema (default {@value #DEFAULT_SCHEMA_VERSION}). */
  public int schemaVersion() { return schemaVersion; }

  /** Business time of the event: as set by the builder, else the append time; {@code null} before it. */
  public Instant occurredAt() { return occurredAt != null ? occurredAt : createdAt; }

  /** W3C {@code traceparent} of the code that appended the event, or {@code null}. */
  public String traceParent() { return traceParent; }

  @Override
  public boolean equals(Object o) {
    return o instanceof OutboxEvent other && id.equals(other.id) && status == other.status
        && attempts == other.attempts && Objects.equals(leaseOwner, other.leaseOwner);
  }

  @Override
  public int hashCode() {
    return id.hashCode();
  }

  /** Ids and state only: payloads may hold personal data and never reach logs. */
  @Override
  public String toString() {
    return "OutboxEvent{id=" + id + ", topic=" + topic + ", aggregate=" + aggregateType + "/" + aggregateId
        + ", status=" + status + ", attempts=" + attempts + "}";
  }

  /** Collects the fields of a new {@link OutboxEvent}; {@link #build()} validates them all. */
  public static final class Builder extends EventFields<Builder> {

    private Builder() {}

    public Builder header(String name, String value) {
      EventRules.requireHeader(name, value);
      headers.put(name, value);
      return this;
    }

    public Builder headers(Map<String, String> headers) {
      headers.forEach(this::header);
      return this;
    }

    /** @throws InvalidEventException naming the field, the value and the fix */
    public OutboxEvent build() {
      return new Stored()
          .id(id != null ? id : UuidV7.next())
          .aggregate(EventRules.requireName("aggregateType", OutboxHeaders.AGGREGATE_TYPE, aggregateType),
              EventRules.requireName("aggregateId", OutboxHeaders.AGGREGATE_ID, aggregateId))
          .topic(EventRules.requireTopic(topic))
          .payload(EventRules.requireJson(payload, EventRules.headersBytes(headers)))
          .headers(headers)
          .priority(priority)
          .schemaVersion(EventRules.requireSchemaVersion(schemaVersion))
          .occurredAt(occurredAt)
          .traceParent(EventRules.requireTraceParent(traceParent))
          .build();
    }
  }

  /**
   * The fields of a stored event, as a store reads them back, with its state (a new event is
   * {@code PENDING} with no attempts); see {@link OutboxEvent#stored()}.
   */
  public static final class Stored extends EventFields<Stored> {
    private Instant createdAt;
    private OutboxStatus status = OutboxStatus.PENDING;
    private int attempts;
    private Instant nextAttemptAt;
    private String lastError;
    private String leaseOwner;
    private Instant leaseUntil;
    private Instant dispatchedAt;
    private long sequence;

    private Stored() {}

    public Stored headers(Map<String, String> headers) {
      this.headers.putAll(headers);
      return this;
    }

    public Stored createdAt(Instant createdAt) {
      this.createdAt = createdAt;
      return this;
    }

    public Stored status(OutboxStatus status) {
      this.status = status;
      return this;
    }

    public Stored attempts(int attempts) {
      this.attempts = attempts;
      return this;
    }

    public Stored nextAttemptAt(Instant nextAttemptAt) {
      this.nextAttemptAt = nextAttemptAt;
      return this;
    }

    public Stored lastError(String lastError) {
      this.lastError = lastError;
      return this;
    }

    public Stored lease(String owner, Instant until) {
      this.leaseOwner = owner;
      this.leaseUntil = until;
      return this;
    }

    public Stored dispatchedAt(Instant dispatchedAt) {
      this.dispatchedAt = dispatchedAt;
      return this;
    }

    public Stored sequence(long sequence) {
      this.sequence = sequence;
      return this;
    }

    /** @throws NullPointerException naming a required field that is missing */
    public OutboxEvent build() {
      return new OutboxEvent(this);
    }
  }
}
