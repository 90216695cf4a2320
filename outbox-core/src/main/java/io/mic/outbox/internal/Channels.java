package io.mic.outbox.internal;

import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.spi.BatchChannel;
import io.mic.outbox.spi.ChannelDispatchFn;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a dispatcher worker reaches a batch publisher, and the warning for a wrapper that hides a publisher's
 * channel: while a worker sends through the {@code dispatchBatch} of a publisher without a channel, this thread
 * knows which one, so a {@link ChannelDispatchFn} reached from inside it knows it was wrapped and hidden.
 */
public final class Channels {
  private static final Logger LOG = LoggerFactory.getLogger(Channels.class);
  private static final ThreadLocal<BatchDispatchFn> SENDING = new ThreadLocal<>();
  private static final Set<Class<?>> REPORTED = ConcurrentHashMap.newKeySet();

  private Channels() {}

  /** A worker's channel: the publisher's own, else one that sends each batch with {@code dispatchBatch}. */
  public static BatchChannel open(BatchDispatchFn publisher) {
    if (publisher instanceof ChannelDispatchFn channels) {
      return channels.channel();
    }
    return events -> {
      Map<UUID, Exception> failures = sending(publisher, events);
      return () -> failures;
    };
  }

  private static Map<UUID, Exception> sending(BatchDispatchFn publisher, List<OutboxEvent> events)
      throws Exception {
    SENDING.set(publisher);
    try {
      return publisher.dispatchBatch(events);
    } finally {
      SENDING.remove();
    }
  }

  /** Warns, once per wrapper class, when a worker reached {@code publisher} through a wrapper without a channel. */
  public static void reportIfHidden(ChannelDispatchFn publisher) {
    BatchDispatchFn wrapper = SENDING.get();
    if (wrapper != null && REPORTED.add(wrapper.getClass())) {
      LOG.warn("{} wraps {} but not its channel, so a dispatcher worker cannot send its next batch before the "
          + "last one's acknowledgements are in; build the wrapper with io.mic.outbox.spi.DispatchDecorator.wrap, "
          + "which keeps the channel", wrapper.getClass().getName(), publisher.getClass().getName());
    }
  }
}
