package io.mic.outbox.spi;

import io.mic.outbox.DispatchFn;
import java.time.Duration;

/**
 * A publisher's quick answer to "would the broker take a publication now?", which a dispatcher worker asks while
 * it waits out a broker outage, so that it resumes within moments of the broker's return instead of sleeping
 * the rest of its backoff. A publisher offers it by implementing this interface beside {@link DispatchFn};
 * {@link DispatchDecorator#wrap} keeps it.
 *
 * <pre>{@code
 * public final class MyPublisher implements DispatchFn, BrokerProbe {
 *   public void dispatch(OutboxEvent event) throws Exception { ... }
 *   public boolean ready() { return connection.isOpen() && connection.ping(Duration.ofMillis(500)); }
 * }
 * }</pre>
 *
 * <p>A worker asks every {@link #EVERY} while it waits, and cuts the wait short only when the answer turns from
 * {@code false} to {@code true}: a probe that always says {@code true} (the connection is up, the broker still
 * refuses) leaves the backoff as it was, so a broker that stays down is not hammered.
 */
@FunctionalInterface
public interface BrokerProbe {
  /** How often a waiting worker asks. */
  Duration EVERY = Duration.ofMillis(250);

  /**
   * Whether the broker would take a publication now: the connection's state, a ping, a cheap request; never a
   * publication. It should answer within about a second; a failure counts as {@code false}.
   */
  boolean ready() throws Exception;

  /**
   * The probe {@code publisher} offers, looking through the wrappers {@link DispatchDecorator#wrap} built;
   * {@code null} when it offers none.
   */
  static BrokerProbe of(DispatchFn publisher) {
    return Decorated.probeOf(publisher);
  }
}
