package io.mic.replay;

import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.OutgoingMessage;
import io.mic.outbox.archive.ArchivedEvent;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * One publication of a replay: the archived event with its subject, headers and message id.
 *
 * <pre>{@code
 * ReplayMessage m = ReplayMessage.of(event, "2026-09-29-rebuild");
 * m.msgId();   // "<original-id>:replay:2026-09-29-rebuild"
 * }</pre>
 *
 * <p>Headers: the original headers, then {@code x-replay: true}, {@code x-replay-batch-id},
 * {@code x-original-event-id}, and {@code x-aggregate-type} / {@code x-aggregate-id}, {@code x-sequence},
 * {@code x-schema-version}, {@code x-occurred-at} and {@code traceparent} when the archive has them. Original headers with one of these names (or {@code Nats-Msg-Id}) are replaced, so a consumer can
 * trust them.
 */
public final class ReplayMessage {
  private final ArchivedEvent event;
  private final String batchId;
  private final Map<String, String> headers;

  private ReplayMessage(ArchivedEvent event, String batchId, Map<String, String> headers) {
    this.event = event;
    this.batchId = batchId;
    this.headers = headers;
  }

  public static ReplayMessage of(ArchivedEvent event, String batchId) {
    Map<String, String> headers = new LinkedHashMap<>();
    event.headers().forEach((name, value) -> {
      if (!isReserved(name)) {
        headers.put(name, value);
      }
    });
    headers.put(OutboxHeaders.REPLAY, "true");
    headers.put(OutboxHeaders.REPLAY_BATCH_ID, batchId);
    headers.put(OutboxHeaders.ORIGINAL_EVENT_ID, event.id());
    if (event.aggregateType() != null) {
      headers.put(OutboxHeaders.AGGREGATE_TYPE, event.aggregateType());
    }
    if (event.aggregateId() != null) {
      headers.put(OutboxHeaders.AGGREGATE_ID, event.aggregateId());
    }
    ArchivedEvent.Envelope envelope = event.envelope();
    if (envelope.sequence() != null) {
      headers.put(OutboxHeaders.SEQUENCE, Long.toString(envelope.sequence()));
    }
    if (envelope.schemaVersion() != null) {
      headers.put(OutboxHeaders.SCHEMA_VERSION, Integer.toString(envelope.schemaVersion()));
    }
    if (envelope.occurredAt() != null) {
      headers.put(OutboxHeaders.OCCURRED_AT, OutboxHeaders.iso(envelope.occurredAt()));
    }
    if (envelope.traceParent() != null) {
      headers.put(OutboxHeaders.TRACEPARENT, envelope.traceParent());
    }
    return new ReplayMessage(event, batchId, Collections.unmodifiableMap(headers));
  }

  private static boolean isReserved(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    return OutboxHeaders.RESERVED.contains(n) || n.equals("nats-msg-id");
  }

  public ArchivedEvent event() {
    return event;
  }

  public String batchId() {
    return batchId;
  }

  public String subject() {
    return event.topic();
  }

  /** Every header of the message except {@code Nats-Msg-Id} (see {@link #msgId()}). */
  public Map<String, String> headers() {
    return headers;
  }

  /** {@code <original-id>:replay:<batch-id>}: a resumed batch is deduplicated, a new batch is not. */
  public String msgId() {
    return event.id() + ":replay:" + batchId;
  }

  /**
   * What a publisher sends: destination = the topic, key = the aggregate id (none when the archive has none),
   * the headers, the payload, {@link #msgId()} as the deduplication id and the original creation time.
   */
  public OutgoingMessage outgoing() {
    return new OutgoingMessage(subject(), event.aggregateId(), headers, payloadBytes(), msgId(), event.createdAt());
  }

  public byte[] payloadBytes() {
    return event.payload().getBytes(StandardCharsets.UTF_8);
  }
}
