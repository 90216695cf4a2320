package io.mic.outbox;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * One claimed batch, as {@link OutboxStore#claimBatch} returns it: its events, the outcomes of each (with the
 * meaning and fencing of the {@link OutboxStore} methods of the same names) and its end. A dispatcher records
 * every outcome of the batch here and closes it when done, so a store that holds something per claim (the
 * JDBC store's {@code transactionalClaims(true)} holds a transaction) keeps it in the handle instead of
 * looking it up from the events.
 *
 * <pre>{@code
 * try (ClaimedBatch batch = store.claimBatch(ClaimRequest.of(owner, 500, ttl))) {
 *   Set<UUID> marked = batch.markDispatched(publish(batch.events()));
 * }
 * }</pre>
 */
public interface ClaimedBatch extends AutoCloseable {

  /** The events claimed, in {@link DispatchOrder}; empty when nothing was available. */
  List<OutboxEvent> events();

  /** {@link OutboxStore#markDispatched} of events of this batch. */
  Set<UUID> markDispatched(Collection<OutboxEvent> events);

  /** {@link OutboxStore#scheduleRetry} of an event of this batch. */
  boolean scheduleRetry(OutboxEvent event, Duration delay, String error);

  /** {@link OutboxStore#markDead} of an event of this batch. */
  boolean markDead(OutboxEvent event, String error);

  /** {@link OutboxStore#release} of events of this batch. */
  Set<UUID> release(Collection<OutboxEvent> events, Duration delay);

  /** {@link OutboxStore#renewLeases} of events of this batch. */
  Set<UUID> renewLeases(Collection<OutboxEvent> events, Duration leaseTtl);

  /**
   * Ends the claim: no outcome follows. An event left without one goes back as if its process had died (with a
   * lease, once the lease runs out). Throws nothing.
   */
  @Override
  void close();
}
