package io.mic.outbox.kafka;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * Reads the headers of a consumed Kafka record as text, the way the publishers write them (UTF-8), so the
 * consumer side uses the same code for every broker:
 *
 * <pre>{@code
 * String eventId = JdbcInbox.eventIdOf(KafkaHeaders.toMap(record.headers()));  // live or replayed
 * boolean first = inbox.tryRecord(connection, "billing", eventId);
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
}
