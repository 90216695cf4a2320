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
 *
 * <p>To wrap a publisher (tracing, metrics), build the wrapper with
 * {@link io.mic.outbox.spi.DispatchDecorator}: it keeps what the wrapped publisher can do, such as NATS's
 * publisher letting a worker send its next batch before the last one's acknowledgements are in.
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
}
