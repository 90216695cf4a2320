package io.mic.outbox.cli.reconcile;

import java.time.Instant;
import java.util.Set;

/**
 * Reads back what a broker holds for one topic: the {@code x-event-id} of every message published at or
 * after {@code from}. Brokers that keep no log (RabbitMQ) cannot offer this.
 */
@FunctionalInterface
public interface BrokerScan {
  Set<String> eventIds(String topic, Instant from) throws Exception;
}
