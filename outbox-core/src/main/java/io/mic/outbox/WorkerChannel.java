package io.mic.outbox;

import io.mic.outbox.internal.Channels;
import io.mic.outbox.spi.BatchChannel;
import io.mic.outbox.spi.BrokerProbe;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One worker's way to the broker: the {@link BatchChannel} of a {@link BatchDispatchFn} (opened on first use),
 * the publication running now (for the stall watchdog), and what the worker knows of a broker outage.
 */
final class WorkerChannel {
  private static final Logger LOG = LoggerFactory.getLogger(OutboxDispatcher.class);

  private final DispatchFn dispatchFn;
  private final String worker;
  private final BrokerOutage outage;
  private BatchChannel channel;
  private volatile Publication current;

  /** A publication under way: its first event, and when it began ({@link System#nanoTime()}). */
  record Publication(OutboxEvent event, long startNanos) {}

  WorkerChannel(DispatcherBuilder<?> b, String worker) {
    this.dispatchFn = b.dispatchFn;
    this.worker = worker;
    this.outage = new BrokerOutage(worker, b.retryInitial, b.retryMax, BrokerProbe.of(b.dispatchFn));
  }

  String worker() {
    return worker;
  }

  /** Whether a chunk may hold more than one event: a plain {@link DispatchFn} publishes one at a time. */
  boolean takesBatches() {
    return dispatchFn instanceof BatchDispatchFn;
  }

  BatchChannel.Sent send(List<OutboxEvent> chunk) throws Exception {
    if (dispatchFn instanceof BatchDispatchFn batchFn) {
      if (channel == null) {
        channel = Channels.open(batchFn);
      }
      return channel.send(List.copyOf(chunk));
    }
    dispatchFn.dispatch(chunk.get(0));
    return Map::of;
  }

  /** Whether batches go through a channel that returns before their outcomes are in. */
  boolean overlapping() {
    return channel != null && channel.overlapping();
  }

  /** Closes the channel, once every batch sent was settled; opened again when needed. */
  void close() {
    BatchChannel open = channel;
    channel = null;
    if (open != null) {
      try {
        open.close();
      } catch (RuntimeException e) {
        LOG.debug("{}: closing the publisher's channel failed", worker, e);
      }
    }
  }

  /** {@code null}: none runs now. */
  void watch(Publication publication) {
    current = publication;
  }

  /** The publication running now, for the stall watchdog; {@code null} between publications. */
  Publication current() {
    return current;
  }

  BrokerOutage outage() {
    return outage;
  }
}
