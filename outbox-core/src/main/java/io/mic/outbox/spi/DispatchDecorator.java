package io.mic.outbox.spi;

import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * What a wrapper adds around its publisher's publications (a span, a measurement, a fault), and the way to build
 * the wrapper: {@link #wrap} returns a publisher of the wrapped one's kind — a {@link DispatchFn}, a
 * {@link BatchDispatchFn}, or a {@link ChannelDispatchFn} whose channel is the wrapped one's with this decorator
 * around each send — so that wrapping costs neither batching nor overlapping batches.
 *
 * <pre>{@code
 * DispatchDecorator timed = (events, next) -> {
 *   long start = System.nanoTime();
 *   BatchChannel.Sent sent = next.send(events);
 *   return () -> {
 *     try {
 *       return sent.outcomes();
 *     } finally {
 *       timer.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
 *     }
 *   };
 * };
 * DispatchFn publisher = timed.wrap(natsPublisher);   // a ChannelDispatchFn still: batches still overlap
 * }</pre>
 */
@FunctionalInterface
public interface DispatchDecorator {

  /**
   * Sends a batch through {@code next} and returns its outcomes to come; the wrapper's caller gets what the
   * returned {@link BatchChannel.Sent} answers.
   */
  BatchChannel.Sent send(List<OutboxEvent> events, BatchChannel next) throws Exception;

  /**
   * Publishes one event through {@code next}; by default {@link #send} with a batch of one, whose failure is
   * thrown.
   */
  default void dispatch(OutboxEvent event, DispatchFn next) throws Exception {
    Map<UUID, Exception> failures = send(List.of(event), events -> {
      next.dispatch(events.get(0));
      return Map::of;
    }).outcomes();
    Exception failure = failures.get(event.id());
    if (failure != null) {
      throw failure;
    }
  }

  /** {@code publisher} with this decorator around each publication, of the same kind as {@code publisher}. */
  default DispatchFn wrap(DispatchFn publisher) {
    return Decorated.of(publisher, this);
  }
}
