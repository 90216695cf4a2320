package io.mic.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The headers every publisher puts on the bus, in one place: their names, and the envelope of an event as
 * header values. Consumers read the same names.
 *
 * <pre>{@code
 * Map<String, String> headers = OutboxHeaders.of(event);   // the event's headers plus the envelope
 * OutgoingMessage message = OutboxHeaders.messageOf(event);  // what a publisher sends for the event
 * String key = OutboxHeaders.idempotencyKey(msgHeaders::get);  // the id to deduplicate on
 * }</pre>
 */
public final class OutboxHeaders {
  /** The event's id; the consumer's idempotency key for live deliveries. */
  public static final String EVENT_ID = "x-event-id";
  public static final String AGGREGATE_TYPE = "x-aggregate-type";
  public static final String AGGREGATE_ID = "x-aggregate-id";
  /** 1, 2, 3 … per aggregate, in commit order; absent when the store assigns none. */
  public static final String SEQUENCE = "x-sequence";
  public static final String SCHEMA_VERSION = "x-schema-version";
  /** Business time, ISO-8601 in UTC. */
  public static final String OCCURRED_AT = "x-occurred-at";
  /** W3C trace context of the code that appended the event. */
  public static final String TRACEPARENT = "traceparent";
  /** {@code true} on every replayed publication. */
  public static final String REPLAY = "x-replay";
  /** Shared by every publication of one replay batch. */
  public static final String REPLAY_BATCH_ID = "x-replay-batch-id";
  /** The id of the replayed event: the idempotency key of replayed deliveries. */
  public static final String ORIGINAL_EVENT_ID = "x-original-event-id";

  /** The longest key an inbox keeps: an idempotency key or a consumer name ({@link #keyProblem}). */
  public static final int MAX_KEY_LENGTH = 255;

  /** Names the library sets; an event's own headers may not use them (compared case-insensitively). */
  public static final Set<String> RESERVED = Set.of(EVENT_ID, AGGREGATE_TYPE, AGGREGATE_ID, SEQUENCE,
      SCHEMA_VERSION, OCCURRED_AT, TRACEPARENT, REPLAY, REPLAY_BATCH_ID, ORIGINAL_EVENT_ID);

  private static final DateTimeFormatter UTC_MICROS = DateTimeFormatter.ISO_INSTANT;

  private OutboxHeaders() {}

  /** The event's own headers followed by its envelope: id, aggregate, sequence, schema version, times, trace. */
  public static Map<String, String> of(OutboxEvent event) {
    Map<String, String> headers = new LinkedHashMap<>(event.headers());
    headers.put(EVENT_ID, event.id().toString());
    headers.put(AGGREGATE_TYPE, event.aggregateType());
    headers.put(AGGREGATE_ID, event.aggregateId());
    if (event.sequence() > 0) {
      headers.put(SEQUENCE, Long.toString(event.sequence()));
    }
    headers.put(SCHEMA_VERSION, Integer.toString(event.schemaVersion()));
    if (event.occurredAt() != null) {
      headers.put(OCCURRED_AT, iso(event.occurredAt()));
    }
    if (event.traceParent() != null) {
      headers.put(TRACEPARENT, event.traceParent());
    }
    return headers;
  }

  /**
   * The message a live event is sent as: destination = topic, key = aggregate id, headers = {@link #of}, payload
   * = the JSON text as UTF-8, deduplication id = the event id.
   */
  public static OutgoingMessage messageOf(OutboxEvent event) {
    return new OutgoingMessage(event.topic(), event.aggregateId(), of(event),
        event.payload().getBytes(StandardCharsets.UTF_8), event.id().toString(), event.createdAt());
  }

  /**
   * The id a consumer deduplicates on: {@link #ORIGINAL_EVENT_ID} for a replayed delivery, else
   * {@link #EVENT_ID}; {@code null} when the message carries neither.
   *
   * @param header reads one header of the message by name ({@code null} when absent)
   */
  public static String idempotencyKey(Function<String, String> header) {
    String original = header.apply(ORIGINAL_EVENT_ID);
    return original != null ? original : header.apply(EVENT_ID);
  }

  /**
   * Why {@code value} cannot be a key an inbox keeps (an idempotency key, a consumer name), or {@code null}
   * when it can: not blank, at most {@value #MAX_KEY_LENGTH} characters, not padded with whitespace (MariaDB
   * compares text ignoring trailing spaces, so {@code 'a'} and {@code 'a '} would be one key there). A
   * message whose key fails this fails it on every delivery: the consumer helpers reject it rather than have
   * it delivered again.
   *
   * @param what names the value in the answer, e.g. {@code eventId}
   */
  public static String keyProblem(String what, String value) {
    if (value == null || value.isBlank()) {
      return what + " must not be blank, was " + (value == null ? "null" : "'" + value + "'");
    }
    if (value.length() > MAX_KEY_LENGTH) {
      return what + " is " + value.length() + " characters long, the limit is " + MAX_KEY_LENGTH + ": '"
          + value.substring(0, 40) + "…'";
    }
    if (!value.strip().equals(value)) {
      return what + " '" + value + "' must not start or end with whitespace";
    }
    return null;
  }

  /** ISO-8601 in UTC with the precision the instant has, up to microseconds. */
  public static String iso(Instant instant) {
    return UTC_MICROS.format(instant.truncatedTo(ChronoUnit.MICROS));
  }
}
