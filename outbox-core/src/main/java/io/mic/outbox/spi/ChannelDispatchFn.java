package io.mic.outbox.spi;

import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.internal.Channels;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * A {@link BatchDispatchFn} whose broker acknowledges asynchronously, so that a dispatcher worker can send its
 * next batch before the last one's acknowledgements are in: each worker asks it for a {@link BatchChannel} once
 * and sends every batch through it (the dispatcher closes it when the worker ends). In throughput mode, through
 * a channel that is {@link BatchChannel#overlapping()}, the worker then settles each batch once the next one
 * went out.
 *
 * <pre>{@code
 * public final class MyPublisher implements ChannelDispatchFn {
 *   public void dispatch(OutboxEvent event) throws Exception { ... }
 *   public BatchChannel channel() { return new MyChannel(connections.take()); }
 * }
 * }</pre>
 *
 * <p>Wrap it with a {@link DispatchDecorator}, which forwards the channel; a wrapper that implements only
 * {@link BatchDispatchFn} hides it (the worker then settles each batch before sending the next), which
 * {@link #dispatchBatch} reports ({@link #reportIfHidden}).
 */
public interface ChannelDispatchFn extends BatchDispatchFn {

  /** A channel for one worker: its batches may share a connection and a window of acknowledgements. */
  BatchChannel channel();

  /**
   * Publishes the batch through a channel of its own and waits for its outcomes, after
   * {@link #reportIfHidden}; an override should call that too.
   */
  @Override
  default Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) throws Exception {
    reportIfHidden(this);
    try (BatchChannel channel = channel()) {
      return channel.send(events).outcomes();
    }
  }

  /** Warns, once per wrapper class, when a worker reached {@code publisher} through a wrapper hiding its channel. */
  static void reportIfHidden(ChannelDispatchFn publisher) {
    Channels.reportIfHidden(publisher);
  }
}
