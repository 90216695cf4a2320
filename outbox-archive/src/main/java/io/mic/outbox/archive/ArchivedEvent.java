package io.mic.outbox.archive;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * One record of an archive: what the archiver wrote and the replay publishes, read from a JSON archive or a
 * ClickHouse row by {@link RecordParser} (the one record type of the archive and the replay).
 *
 * <pre>{@code
 * ArchivedEvent e = new ArchivedEvent("0190a1b2-...", "order.created", "order", "42",
 *     Instant.parse("2026-09-29T08:00:00.123Z"), "{\"orderId\":42}", Map.of("tenant", "acme"));
 * }</pre>
 *
 * @param id the original event id, the stable idempotency key ({@code x-original-event-id})
 * @param aggregateType may be {@code null} when the archive has none
 * @param aggregateId may be {@code null} when the archive has none
 * @param payload the archived JSON value as compact JSON text (meaning unchanged, whitespace removed)
 * @param headers the original event's headers, in archive order (empty, never {@code null}, when the record has
 *     none)
 * @param envelope the event's sequence, schema version, business time and trace context, each absent
 *     ({@code null}) in archives written before the envelope
 */
public record ArchivedEvent(String id, String topic, String aggregateType, String aggregateId,
    Instant createdAt, String payload, Map<String, String> headers, Envelope envelope) {

  public ArchivedEvent {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(topic, "topic");
    Objects.requireNonNull(createdAt, "createdAt");
    Objects.requireNonNull(payload, "payload");
    headers = headers == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(headers));
    envelope = envelope == null ? Envelope.NONE : envelope;
  }

  /** A record without the envelope's fields, as archives written before it hold. */
  public ArchivedEvent(String id, String topic, String aggregateType, String aggregateId, Instant createdAt,
      String payload, Map<String, String> headers) {
    this(id, topic, aggregateType, aggregateId, createdAt, payload, headers, Envelope.NONE);
  }

  /**
   * The archived envelope fields ({@code sequence}, {@code schema_version}, {@code occurred_at},
   * {@code trace_parent}); each is {@code null} when the archive has none.
   */
  public record Envelope(Long sequence, Integer schemaVersion, Instant occurredAt, String traceParent) {
    public static final Envelope NONE = new Envelope(null, null, null, null);
  }

  /** Ids and time only: payloads may hold personal data and never reach logs. */
  @Override
  public String toString() {
    return "ArchivedEvent{id=" + id + ", topic=" + topic + ", createdAt=" + createdAt + "}";
  }
}
