package io.mic.outbox.cli.reconcile;

import java.time.Duration;
import java.time.Instant;
import java.util.Set;

/**
 * Reads back what a broker holds for one topic: the {@code x-event-id} of every message published at or
 * after {@code from}, by the broker's clock less {@link #CLOCK_MARGIN}. Brokers that keep no log (RabbitMQ)
 * cannot offer this.
 */
@FunctionalInterface
public interface BrokerScan {
  /**
   * How much earlier than {@code from} a scan begins: {@code from} is a {@code created_at} by the database's
   * clock, a message's time is the broker's (or a producer's). Messages of events outside the range are left
   * out by the comparison anyway.
   */
  Duration CLOCK_MARGIN = Duration.ofMinutes(1);

  Set<String> eventIds(String topic, Instant from) throws Exception;
}
