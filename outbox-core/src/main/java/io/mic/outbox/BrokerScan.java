package io.mic.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.Set;

/**
 * Reads back what a broker holds for one topic: the {@code x-event-id} of every message published at or
 * after {@code from}, by the broker's clock less {@link #CLOCK_MARGIN}. It lives beside the publisher of each
 * broker that keeps a log ({@code JetStreamScan} in outbox-nats, {@code KafkaTopicScan} in outbox-kafka);
 * RabbitMQ keeps none, so it has no scan. The {@code mic-outbox reconcile} command compares it with the outbox.
 *
 * <pre>{@code
 * Set<String> onBroker = scan.eventIds("order.created", Instant.parse("2026-09-29T08:00:00Z"));
 * }</pre>
 */
@FunctionalInterface
public interface BrokerScan {
  /**
   * How much earlier than {@code from} a scan begins: {@code from} is a {@code created_at} by the database's
   * clock, a message's time is the broker's (or a producer's). Messages of events outside the range are left
   * out by the comparison anyway.
   */
  Duration CLOCK_MARGIN = Duration.ofMinutes(1);

  /**
   * The event ids of the topic's messages from {@code from} (less {@link #CLOCK_MARGIN}) to the topic's end
   * when the scan starts; nothing on the broker is acknowledged or changed.
   *
   * @throws ScanFailedException the broker could not be read to that end: what failed, on which server
   */
  Set<String> eventIds(String topic, Instant from) throws Exception;

  /** A scan could not read the broker to its end; the message names the broker, the topic and what happened. */
  final class ScanFailedException extends OutboxException {
    private static final long serialVersionUID = 1L;

    public ScanFailedException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
