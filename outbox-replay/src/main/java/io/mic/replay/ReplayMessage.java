package io.mic.replay;

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
 * {@code x-original-event-id}, and {@code x-aggregate-type} / {@code x-aggregate-id} when the archive has
 * them. Original headers with one of these names (or {@code Nats-Msg-Id}) are replaced, so a consumer can
 * trust them.
 */
public final class ReplayMessage {
  public static final String REPLAY_HEADER = "x-replay";
  public static final String BATCH_ID_HEADER = "x-replay-batch-id";
  public static final String ORIGINAL_ID_HEADER = "x-original-event-id";
  public static final String AGGREGATE_TYPE_HEADER = "x-aggregate-type";
  public static final String AGGREGATE_ID_HEADER = "x-aggregate-id";
  public static final String MSG_ID_HEADER = "Nats-Msg-Id";

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
    headers.put(REPLAY_HEADER, "true");
    headers.put(BATCH_ID_HEADER, batchId);
    headers.put(ORIGINAL_ID_HEADER, event.id());
    if (event.aggregateType() != null) {
      headers.put(AGGREGATE_TYPE_HEADER, event.aggregateType());
    }
    if (event.aggregateId() != null) {
      headers.put(AGGREGATE_ID_HEADER, event.aggregateId());
    }
    return new ReplayMessage(event, batchId, Collections.unmodifiableMap(headers));
  }

  private static boolean isReserved(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    return n.equals(REPLAY_HEADER) || n.equals(BATCH_ID_HEADER) || n.equals(ORIGINAL_ID_HEADER)
        || n.equals(AGGREGATE_TYPE_HEADER) || n.equals(AGGREGATE_ID_HEADER) || n.equals("x-event-id")
        || n.equals("nats-msg-id");
  }

  public ArchivedEvent event() {
    return event;
  }

  public String batchId() {
    return batchId;
  }

  /** The subject is the topic. */
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

  /** The archived JSON, compact, as UTF-8. */
  public byte[] payloadBytes() {
    return event.payload().getBytes(StandardCharsets.UTF_8);
  }
}
