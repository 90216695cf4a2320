package io.mic.outbox.kafka;

import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxHeaders;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeSet;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * Reads the headers of a consumed Kafka record as text, the way the publishers write them (UTF-8), so the
 * consumer side uses the same code for every broker:
 *
 * <pre>{@code
 * String eventId = KafkaHeaders.idempotencyKey(record.headers());   // live or replayed
 * inbox.runOnce("billing", eventId, tx -> createInvoice(tx, record));
 * consumer.commitSync();   // after the effect: a crash before it redelivers, and the inbox absorbs that
 * }</pre>
 */
public final class KafkaHeaders {
  private KafkaHeaders() {}

  /**
   * The record's headers decoded as UTF-8, in record order. Kafka allows a name to repeat: the last value
   * wins, as {@link Headers#lastHeader} does. A header without a value is left out.
   */
  public static Map<String, String> toMap(Headers headers) {
    if (headers == null) {
      return Map.of();
    }
    Map<String, String> map = new LinkedHashMap<>();
    for (Header header : headers) {
      if (header.value() != null) {
        map.put(header.key(), new String(header.value(), StandardCharsets.UTF_8));
      }
    }
    return Collections.unmodifiableMap(map);
  }

  /**
   * The id a consumer deduplicates on: header {@code x-original-event-id} for a replay, else
   * {@code x-event-id} (the last value of each, as UTF-8).
   *
   * @throws OutboxException if the record carries neither header (it was not published by MIC Outbox), or an
   *     id no inbox can keep ({@link OutboxHeaders#keyProblem})
   */
  public static String idempotencyKey(Headers headers) {
    Map<String, String> map = toMap(headers);
    String key = OutboxHeaders.idempotencyKey(map::get);
    if (key == null || key.isBlank()) {
      throw new OutboxException("the record carries no event id: expected header " + OutboxHeaders.EVENT_ID
          + " (live) or " + OutboxHeaders.ORIGINAL_EVENT_ID + " (replay); headers present: "
          + new TreeSet<>(map.keySet()));
    }
    String problem = OutboxHeaders.keyProblem("its event id", key);
    if (problem != null) {
      throw new OutboxException("the record carries an event id no inbox can keep: " + problem);
    }
    return key;
  }
}
