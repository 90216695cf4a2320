package io.mic.outbox;

import java.util.Objects;
import java.util.UUID;

/**
 * An aggregate whose later events wait behind a dead one: with {@code holdAggregateOnDeadLetter(true)} none
 * of them is published until an operator redrives the dead event (it goes first, then the waiting ones in
 * order) or purges it (the waiting ones go on in order). An aggregate with several dead events (made before
 * holding began) waits until each is redriven or purged.
 *
 * <pre>{@code
 * for (HeldAggregate h : store.heldAggregates()) {
 *   log.warn("{}/{} held by {}: {} event(s) waiting", h.aggregateType(), h.aggregateId(), h.deadEventId(), h.waiting());
 * }
 * }</pre>
 *
 * @param deadEventId the aggregate's oldest {@code DLQ} event
 * @param waiting the aggregate's {@code PENDING} or {@code PROCESSING} events, which wait (at least 1)
 */
public record HeldAggregate(String aggregateType, String aggregateId, UUID deadEventId, long waiting) {

  public HeldAggregate {
    Objects.requireNonNull(aggregateType, "aggregateType");
    Objects.requireNonNull(aggregateId, "aggregateId");
    Objects.requireNonNull(deadEventId, "deadEventId");
  }
}
