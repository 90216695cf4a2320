package io.mic.outbox.spi;

import io.mic.outbox.DeliveryHandler;
import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.OutboxException;
import io.mic.outbox.SchemaVersions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The part every broker's consumer helper shares: run the consumer's handler, and turn its failure into an
 * outcome instead of an exception that would escape into the broker client's callback. The helper then
 * settles the message by the outcome. With a {@link SchemaVersions}, it is also the consumer's schema guard: a
 * message newer than the consumer understands never reaches the handler.
 */
public final class Deliveries {
  private static final Logger LOG = LoggerFactory.getLogger(Deliveries.class);

  /**
   * A message refused for its schema version comes back as often as the broker redelivers it (at once on a
   * RabbitMQ classic queue or a plain Kafka poll loop): its WARN is repeated at most this often per topic and
   * version, and at DEBUG in between.
   */
  public static final Duration SCHEMA_WARNING_INTERVAL = Duration.ofMinutes(1);
  private static final int MAX_WARNED = 1_000;
  private static final Map<String, Long> LAST_WARNED = new ConcurrentHashMap<>();

  private Deliveries() {}

  /**
   * Runs {@code handler} with {@code key} as {@link #attempt(DeliveryHandler, String, String)} does, if
   * {@code accepts} understands the message's schema version. A newer version is not handed to the handler:
   * the outcome is {@link DeliveryOutcome#REDELIVERED}, so the helper settles the message to be delivered again
   * (never acknowledged, never lost), with one WARN naming the topic, the event, the version and the fix. A
   * version that is no number is {@link DeliveryOutcome#REJECTED}, as a missing event id is.
   *
   * @param topic the name the message arrived under (subject, routing key, Kafka topic)
   * @param schemaVersion the value of its {@code x-schema-version} header, {@code null} when absent (version 1)
   */
  public static DeliveryOutcome attempt(DeliveryHandler handler, String key, String source, SchemaVersions accepts,
      String topic, String schemaVersion) {
    int version;
    try {
      version = SchemaVersions.versionOf(schemaVersion);
    } catch (OutboxException e) {
      return rejected("event " + key + " from " + source + ": " + e.getMessage());
    }
    if (accepts.accepts(topic, version)) {
      return attempt(handler, key, source);
    }
    refusedVersion(topic, key, version, accepts.highest(topic));
    return DeliveryOutcome.REDELIVERED;
  }

  private static void refusedVersion(String topic, String key, int version, int highest) {
    String message = "not applying event {} on topic '{}': its schema version {} is newer than this consumer"
        + " reads (up to {}); it is left to be delivered again. Fix: deploy a consumer that reads version {},"
        + " or pause the topic until one runs: mic-outbox pause --topic {}";
    if (warnNow(topic + "#" + version)) {
      LOG.warn(message, key, topic, version, highest, version, topic);
    } else {
      LOG.debug(message, key, topic, version, highest, version, topic);
    }
  }

  private static boolean warnNow(String topicVersion) {
    long now = System.nanoTime();
    Long last = LAST_WARNED.get(topicVersion);
    if (last != null && now - last < SCHEMA_WARNING_INTERVAL.toNanos()) {
      return false;
    }
    if (LAST_WARNED.size() >= MAX_WARNED) {
      LAST_WARNED.clear();
    }
    return last == null ? LAST_WARNED.putIfAbsent(topicVersion, now) == null
        : LAST_WARNED.replace(topicVersion, last, now);
  }

  /**
   * Runs {@code handler} with {@code key}.
   *
   * @param source where the message came from, for the log ({@code "queue billing"}, {@code "order.created"})
   * @return {@link DeliveryOutcome#APPLIED} or {@link DeliveryOutcome#DUPLICATE} as the handler returned; when
   *     it threw, {@link DeliveryOutcome#REDELIVERED}, with the failure logged at WARN (an interrupt is restored)
   */
  public static DeliveryOutcome attempt(DeliveryHandler handler, String key, String source) {
    try {
      return DeliveryOutcome.of(handler.handle(key));
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      LOG.warn("handling event {} from {} failed; nothing was committed and it will be delivered again", key,
          source, e);
      return DeliveryOutcome.REDELIVERED;
    }
  }

  /** Logs, at WARN, a message settled for good because {@code problem} (no event id) no redelivery can fix. */
  public static DeliveryOutcome rejected(String problem) {
    LOG.warn("{}: the message is not delivered again", problem);
    return DeliveryOutcome.REJECTED;
  }
}
