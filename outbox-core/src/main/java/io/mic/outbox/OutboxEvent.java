package io.mic.outbox;

import io.mic.outbox.internal.Json;
import io.mic.outbox.internal.UuidV7;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;

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
  public static final Set<String> RESERVED_HEADERS = reservedHeaders();
  /** The version of a payload's schema when the builder sets none. */
  public static final int DEFAULT_SCHEMA_VERSION = 1;

  /** W3C trace context, version 00: version, trace id, parent id, flags, in lower-case hex. */
  private static final Pattern TRACE_PARENT = Pattern.compile("00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}");
  private static final Pattern TOPIC = Pattern.compile("[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*");
  /** An HTTP token (RFC 7230 {@code tchar}), which every broker's header names accept. */
  private static final Pattern HEADER_NAME = Pattern.compile("[A-Za-z0-9!#$%&'*+.^_`|~-]+");
  private static final String BROKER_HEADER_PREFIX = "nats-";

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

  private static Set<String> reservedHeaders() {
    Set<String> names = new java.util.HashSet<>(OutboxHeaders.RESERVED);
    names.add("nats-msg-id");
    return Set.copyOf(names);
  }

  private OutboxEvent(Builder b) {
    this.id = b.id != null ? b.id : UuidV7.next();
    this.aggregateType = requireName("aggregateType", OutboxHeaders.AGGREGATE_TYPE, b.aggregateType);
    this.aggregateId = requireName("aggregateId", OutboxHeaders.AGGREGATE_ID, b.aggregateId);
    this.topic = requireTopic(b.topic);
    this.payload = requireJson(b.payload, headersBytes(b.headers));
    this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(b.headers));
    this.priority = b.priority;
    this.createdAt = null;
    this.status = OutboxStatus.PENDING;
    this.attempts = 0;
    this.nextAttemptAt = null;
    this.lastError = null;
    this.leaseOwner = null;
    this.leaseUntil = null;
    this.dispatchedAt = null;
    this.sequence = 0;
    if (b.schemaVersion < 1) {
      throw new InvalidEventException("schemaVersion must be >= 1, was " + b.schemaVersion
          + ": number the versions of a payload's schema from 1");
    }
    this.schemaVersion = b.schemaVersion;
    this.occurredAt = b.occurredAt;
    this.traceParent = requireTraceParent(b.traceParent);
  }

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

  /** A copy with another stored state; the validated fields are shared, not checked again. */
  OutboxEvent withState(OutboxStatus status, int attempts, Instant createdAt, Instant nextAttemptAt,
      String lastError, String leaseOwner, Instant leaseUntil, Instant dispatchedAt) {
    return new OutboxEvent(this, status, attempts, createdAt, nextAttemptAt, lastError, leaseOwner, leaseUntil,
        dispatchedAt);
  }

  private OutboxEvent(OutboxEvent e, OutboxStatus status, int attempts, Instant createdAt, Instant nextAttemptAt,
      String lastError, String leaseOwner, Instant leaseUntil, Instant dispatchedAt) {
    this.id = e.id;
    this.aggregateType = e.aggregateType;
    this.aggregateId = e.aggregateId;
    this.topic = e.topic;
    this.payload = e.payload;
    this.headers = e.headers;
    this.priority = e.priority;
    this.createdAt = createdAt;
    this.status = status;
    this.attempts = attempts;
    this.nextAttemptAt = nextAttemptAt;
    this.lastError = lastError;
    this.leaseOwner = leaseOwner;
    this.leaseUntil = leaseUntil;
    this.dispatchedAt = dispatchedAt;
    this.sequence = e.sequence;
    this.schemaVersion = e.schemaVersion;
    this.occurredAt = e.occurredAt;
    this.traceParent = e.traceParent;
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
    Stored b = new Stored()
        .id(id).aggregate(aggregateType, aggregateId).topic(topic).payload(payload).priority(priority)
        .createdAt(createdAt).status(status).attempts(attempts).nextAttemptAt(nextAttemptAt)
        .lastError(lastError).lease(leaseOwner, leaseUntil).dispatchedAt(dispatchedAt)
        .sequence(sequence).schemaVersion(schemaVersion).occurredAt(occurredAt).traceParent(traceParent);
    b.headers.putAll(headers);
    return b;
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

  private static String requireName(String field, String header, String value) {
    if (value == null || value.isBlank()) {
      throw new InvalidEventException(field + " is required and must not be blank, was "
          + (value == null ? "null" : "'" + value + "'") + ": set it with .aggregate(type, id)");
    }
    if (value.length() > MAX_NAME_LENGTH) {
      throw new InvalidEventException(field + " is " + value.length() + " characters long; the limit is "
          + MAX_NAME_LENGTH);
    }
    if (value.startsWith(" ") || value.endsWith(" ")) {
      throw new InvalidEventException(field + " '" + value + "' starts or ends with a space; databases that"
          + " compare text ignoring trailing spaces (MariaDB, MySQL) would take it for '" + value.strip()
          + "': strip it");
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x20 || c > 0x7e) {
        throw new InvalidEventException(field + " contains " + describe(c) + " at index " + i
            + ": the aggregate travels in NATS headers (" + header + "), which carry printable ASCII only;"
            + " encode it, e.g. percent-encoding");
      }
    }
    return value;
  }

  private static String requireTraceParent(String value) {
    if (value == null) {
      return null;
    }
    java.util.regex.Matcher m = TRACE_PARENT.matcher(value);
    if (!m.matches() || m.group(1).chars().allMatch(c -> c == '0') || m.group(2).chars().allMatch(c -> c == '0')) {
      throw new InvalidEventException("traceParent must be a W3C traceparent such as"
          + " '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' (version 00, lower-case hex, trace and"
          + " parent ids not all zero), was '" + (value.length() > 80 ? value.substring(0, 80) + "…" : value) + "'");
    }
    return value;
  }

  private static String describe(char c) {
    return c > 0x7f ? "a non-ASCII character" : String.format("a control character (U+%04X)", (int) c);
  }

  private static String requireTopic(String topic) {
    if (topic == null || topic.isEmpty()) {
      throw new InvalidEventException("topic is required: set it with .topic(\"order.created\")");
    }
    if (topic.length() > MAX_NAME_LENGTH) {
      throw new InvalidEventException("topic is " + topic.length() + " characters long; the limit is "
          + MAX_NAME_LENGTH);
    }
    if (!TOPIC.matcher(topic).matches()) {
      throw new InvalidEventException("topic '" + topic + "' is invalid: use letters, digits, '_', '-' and"
          + " '.' between non-empty parts (no wildcards '*' or '>', no spaces, no leading, trailing or"
          + " double dots), e.g. 'order.created'");
    }
    return topic;
  }

  private static String requireJson(String payload, long headersBytes) {
    if (payload == null) {
      throw new InvalidEventException("payload is required: set it with .payload(jsonText)");
    }
    long bytes = utf8Length(payload);
    if (bytes + headersBytes > MAX_PAYLOAD_BYTES) {
      String size = headersBytes == 0 ? "payload is " + bytes + " bytes of UTF-8"
          : "payload and headers are " + (bytes + headersBytes) + " bytes (payload " + bytes + ", headers "
              + headersBytes + ")";
      throw new InvalidEventException(size + "; the limit is " + MAX_PAYLOAD_BYTES
          + " bytes (OutboxEvent.MAX_PAYLOAD_BYTES): store large documents elsewhere and send a reference");
    }
    Json.Problem problem = Json.problem(payload);
    if (problem != null && problem.limit()) {
      throw new InvalidEventException("payload exceeds a limit of the JSON parser (" + problem.text()
          + "): nest at most 1000 levels and write numbers with at most 1000 digits (send longer ones as"
          + " strings)");
    }
    if (problem != null) {
      throw new InvalidEventException("payload is not valid JSON: " + problem.text());
    }
    return payload;
  }

  /** The UTF-8 length of {@code text}; refuses a lone surrogate, which has no UTF-8 form. */
  private static long utf8Length(String text) {
    long bytes = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x80) {
        bytes += 1;
      } else if (c < 0x800) {
        bytes += 2;
      } else if (!Character.isSurrogate(c)) {
        bytes += 3;
      } else if (Character.isHighSurrogate(c) && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        bytes += 4;
        i++;
      } else {
        throw new InvalidEventException(String.format("payload contains a lone UTF-16 surrogate (U+%04X) at"
            + " index %d: it has no UTF-8 form and a database would store '?' instead; fix the code that"
            + " built the text (e.g. a string cut in the middle of an emoji)", (int) c, i));
      }
    }
    return bytes;
  }

  /** The size of {@code headers} as they travel: {@code name: value} and CR LF each (ASCII: one byte a char). */
  private static long headersBytes(Map<String, String> headers) {
    long bytes = 0;
    for (Map.Entry<String, String> h : headers.entrySet()) {
      bytes += h.getKey().length() + 2 + h.getValue().length() + 2;
    }
    if (bytes > MAX_HEADERS_BYTES) {
      throw new InvalidEventException("headers are " + bytes + " bytes on the wire; the limit is "
          + MAX_HEADERS_BYTES + " (OutboxEvent.MAX_HEADERS_BYTES): send fewer or shorter headers, or move the"
          + " data into the payload");
    }
    return bytes;
  }

  private static void requireHeader(String name, String value) {
    if (name == null || name.isEmpty() || name.length() > MAX_HEADER_NAME_LENGTH
        || !HEADER_NAME.matcher(name).matches()) {
      throw new InvalidEventException("header name " + (name == null ? "null" : "'" + name + "'")
          + " is invalid: use 1 to " + MAX_HEADER_NAME_LENGTH
          + " letters, digits or !#$%&'*+-.^_`|~ (an HTTP token), e.g. 'tenant'");
    }
    String lower = name.toLowerCase(Locale.ROOT);
    if (RESERVED_HEADERS.contains(lower)) {
      throw new InvalidEventException("header '" + name + "' is set by MIC Outbox on every publication;"
          + " choose another name");
    }
    if (lower.startsWith(BROKER_HEADER_PREFIX)) {
      throw new InvalidEventException("header '" + name + "' is in the 'Nats-' namespace, which NATS JetStream"
          + " interprets (expected stream, rollup, deduplication …): choose a name without that prefix");
    }
    if (value == null) {
      throw new InvalidEventException("header '" + name + "' has a null value: omit the header instead");
    }
    if (value.length() > MAX_HEADER_VALUE_LENGTH) {
      throw new InvalidEventException("header '" + name + "' is " + value.length()
          + " characters long; the limit is " + MAX_HEADER_VALUE_LENGTH);
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '\r' || c == '\n' || c == 0) {
        throw new InvalidEventException("header '" + name + "' contains a " + (c == 0 ? "NUL" : "CR or LF")
            + " character at index " + i + ": header values must be a single line");
      }
      if (c > 0x7f) {
        throw new InvalidEventException("header '" + name + "' contains a non-ASCII character at index " + i
            + ": NATS headers carry printable ASCII only; percent-encode the value or move it into the payload");
      }
      if (c < 0x20 || c == 0x7f) {
        throw new InvalidEventException("header '" + name + "' contains " + describe(c) + " at index " + i
            + ": header values must be printable ASCII");
      }
    }
  }

  /** Collects the fields of a new {@link OutboxEvent}; {@link #build()} validates them all. */
  public static final class Builder {
    private UUID id;
    private String aggregateType;
    private String aggregateId;
    private String topic;
    private String payload;
    private final Map<String, String> headers = new LinkedHashMap<>();
    private int priority;
    private int schemaVersion = DEFAULT_SCHEMA_VERSION;
    private Instant occurredAt;
    private String traceParent;

    private Builder() {}

    /** A fixed id, e.g. to make a business operation's event idempotent; by default a fresh UUIDv7. */
    public Builder id(UUID id) {
      this.id = id;
      return this;
    }

    /** The ordering key: events of one aggregate keep their order in ordered mode. */
    public Builder aggregate(String aggregateType, String aggregateId) {
      this.aggregateType = aggregateType;
      this.aggregateId = aggregateId;
      return this;
    }

    public Builder topic(String topic) {
      this.topic = topic;
      return this;
    }

    /** JSON text (object, array or scalar); it must parse as exactly one JSON value. */
    public Builder payload(String json) {
      this.payload = json;
      return this;
    }

    public Builder header(String name, String value) {
      requireHeader(name, value);
      headers.put(name, value);
      return this;
    }

    public Builder headers(Map<String, String> headers) {
      headers.forEach(this::header);
      return this;
    }

    public Builder priority(int priority) {
      this.priority = priority;
      return this;
    }

    /** Version of the payload's schema, from 1 (the default); consumers choose their decoder by it. */
    public Builder schemaVersion(int schemaVersion) {
      this.schemaVersion = schemaVersion;
      return this;
    }

    /** When the business fact happened; by default the append time. */
    public Builder occurredAt(Instant occurredAt) {
      this.occurredAt = occurredAt;
      return this;
    }

    /** W3C {@code traceparent} of the appending code, so consumers continue its trace. */
    public Builder traceParent(String traceParent) {
      this.traceParent = traceParent;
      return this;
    }

    /** @throws InvalidEventException naming the field, the value and the fix */
    public OutboxEvent build() {
      return new OutboxEvent(this);
    }
  }

  /** The fields of a stored event, as a store reads them back; see {@link OutboxEvent#stored()}. */
  public static final class Stored {
    private UUID id;
    private String aggregateType;
    private String aggregateId;
    private String topic;
    private String payload;
    private final Map<String, String> headers = new LinkedHashMap<>();
    private int priority;
    private Instant createdAt;
    private OutboxStatus status = OutboxStatus.PENDING;
    private int attempts;
    private Instant nextAttemptAt;
    private String lastError;
    private String leaseOwner;
    private Instant leaseUntil;
    private Instant dispatchedAt;
    private long sequence;
    private int schemaVersion = DEFAULT_SCHEMA_VERSION;
    private Instant occurredAt;
    private String traceParent;

    private Stored() {}

    public Stored id(UUID id) {
      this.id = id;
      return this;
    }

    public Stored aggregate(String aggregateType, String aggregateId) {
      this.aggregateType = aggregateType;
      this.aggregateId = aggregateId;
      return this;
    }

    public Stored topic(String topic) {
      this.topic = topic;
      return this;
    }

    public Stored payload(String json) {
      this.payload = json;
      return this;
    }

    public Stored headers(Map<String, String> headers) {
      this.headers.putAll(headers);
      return this;
    }

    public Stored priority(int priority) {
      this.priority = priority;
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

    public Stored schemaVersion(int schemaVersion) {
      this.schemaVersion = schemaVersion;
      return this;
    }

    public Stored occurredAt(Instant occurredAt) {
      this.occurredAt = occurredAt;
      return this;
    }

    public Stored traceParent(String traceParent) {
      this.traceParent = traceParent;
      return this;
    }

    /** @throws NullPointerException naming a required field that is missing */
    public OutboxEvent build() {
      return new OutboxEvent(this);
    }
  }
}
