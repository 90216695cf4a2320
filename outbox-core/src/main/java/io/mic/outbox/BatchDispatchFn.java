package io.mic.outbox;

import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * A {@link DispatchFn} that can publish a whole batch at once, for brokers with asynchronous
 * acknowledgements: a batch of 500 then costs one window of round trips, not 500 sequential ones. The
 * dispatcher calls {@link #dispatchBatch} with the batch (in store order) instead of calling
 * {@link #dispatch} per event.
 *
 * <p>Ordered mode stays ordered: a batch never holds two events of one aggregate. In throughput mode the
 * events may be acknowledged in any order, which that mode allows.
 *
 * <pre>{@code
 * Map<UUID, Exception> failures = publisher.dispatchBatch(events);  // empty: all acknowledged
 * }</pre>
 */
public interface BatchDispatchFn extends DispatchFn {

  /**
   * Publishes every event and waits for the outcome of each.
   *
   * @return the failure of each event that was not acknowledged, by event id; an event absent from the
   *     map was acknowledged. An unknown outcome (timeout) is a failure. Use
   *     {@link PublishUnavailableException} for events that failed because the broker was unreachable.
   * @throws Exception a failure that applies to every event of the batch
   */
  Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) throws Exception;

  /**
   * A channel for one worker, which each dispatcher worker asks for once ({@link AsyncOutboxDispatcher}
   * closes it when the worker ends). In throughput mode a pipelined worker sends its next batch through it
   * before the last one's outcomes are all in ({@link BatchChannel}). This default sends each batch with
   * {@link #dispatchBatch} and has its outcomes at once: override it where the broker's acknowledgements
   * arrive asynchronously, and forward it in a wrapper, which otherwise hides the channel it wraps.
   */
  default BatchChannel channel() {
    return events -> {
      Map<UUID, Exception> failures = dispatchBatch(events);
      return () -> failures;
    };
  }
}
