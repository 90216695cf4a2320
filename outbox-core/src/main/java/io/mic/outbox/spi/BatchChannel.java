package io.mic.outbox.spi;

import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.PublishUnavailableException;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * One dispatcher worker's way to the broker ({@link ChannelDispatchFn#channel()}): it sends a batch and returns
 * before the batch's acknowledgements are all in, so that the worker can send its next batch meanwhile and
 * the publisher's window of unacknowledged publications stays full from one batch to the next, as it does
 * for a client publishing one endless stream.
 *
 * <p>One thread uses a channel. Batches are settled in the order they were sent, and at most two are sent
 * and not yet settled at any time:
 *
 * <pre>{@code
 * BatchChannel.Sent first = channel.send(batch1);
 * BatchChannel.Sent second = channel.send(batch2);    // while batch1's acknowledgements arrive
 * Map<UUID, Exception> failures = first.outcomes();   // as dispatchBatch(batch1) would return them
 * BatchChannel.Sent third = channel.send(batch3);
 * failures = second.outcomes();
 * }</pre>
 */
@FunctionalInterface
public interface BatchChannel extends AutoCloseable {

  /**
   * Sends every event of the batch, and returns once each is on its way or failed.
   *
   * @throws PublishUnavailableException the broker is not reachable at all: nothing was sent
   * @throws Exception a failure that applies to every event of the batch
   */
  Sent send(List<OutboxEvent> events) throws Exception;

  /**
   * Whether {@link #send} returns before the batch's outcomes are in, so that sending the next batch before
   * settling this one keeps the broker busy; {@code false} (the default) for a channel whose send waits for
   * them: the worker then settles each batch at once, and a crash repeats no more than it would have.
   */
  default boolean overlapping() {
    return false;
  }

  /** Lets go of what the channel holds; every batch sent was settled before. */
  @Override
  default void close() {}

  /** A batch sent through a {@link BatchChannel}, whose acknowledgements may still be arriving. */
  @FunctionalInterface
  interface Sent {
    /**
     * Waits for the outcome of every event of the batch.
     *
     * @return what {@link BatchDispatchFn#dispatchBatch} returns: the failure of each event that was not
     *     acknowledged, by id
     * @throws Exception a failure that applies to every event of the batch
     */
    Map<UUID, Exception> outcomes() throws Exception;
  }
}
