package io.mic.outbox;

import java.time.Duration;

/**
 * What one worker's batches are dispatched with, read once from the builder.
 *
 * @param markAtEnd whether a batch's successes are marked together at its end: with claims, and in a
 *     pipelined worker without claims (it reads its next batch while publishing this one)
 * @param hold whether a dead event holds its aggregate's later events (ordered mode only)
 * @param worker the name used in lease owners and logs
 */
record DispatchSettings(OutboxStore store, DispatchFn dispatchFn, boolean useClaim, boolean markAtEnd,
    Duration leaseTtl, boolean ordered, boolean hold, int batchSize, int aggregateRun, int maxAttempts, Backoff backoff,
    OutboxListener listener, String worker) {

  static DispatchSettings of(DispatcherBuilder<?> b, String worker, boolean pipelined) {
    return new DispatchSettings(b.store, b.dispatchFn, b.useClaim, b.useClaim || pipelined, b.leaseTtl,
        b.preserveAggregateOrder, b.holdAggregateOnDeadLetter, b.batchSize, b.aggregateRun, b.maxAttempts, b.backoff(),
        OutboxListeners.of(b.listener), worker);
  }
}
