package io.mic.outbox;

/**
 * What one {@link OutboxDispatcher#dispatchOnce()} did.
 *
 * @param fetched events read or claimed from the store
 * @param dispatched events published and marked {@code DISPATCHED}
 * @param retried events that failed and were scheduled for a later attempt
 * @param deadLettered events moved to the {@code DLQ}
 * @param released events put back untried (broker unavailable, or the dispatcher was stopping)
 * @param leaseLost events whose mark changed nothing because their lease had passed to another worker
 */
public record DispatchResult(int fetched, int dispatched, int retried, int deadLettered, int released, int leaseLost) {

  public static final DispatchResult EMPTY = new DispatchResult(0, 0, 0, 0, 0, 0);

  public boolean isEmpty() {
    return fetched == 0;
  }
}
