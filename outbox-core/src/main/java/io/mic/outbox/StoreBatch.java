package io.mic.outbox;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * A batch whose outcomes are the store's own methods: a lease's claim, fenced by its owner in every row, and a
 * read without a claim. {@link OutboxStore#claimBatch}'s default, so that a store of one's own needs nothing
 * more.
 */
record StoreBatch(OutboxStore store, List<OutboxEvent> events) implements ClaimedBatch {

  @Override
  public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
    return store.markDispatched(events);
  }

  @Override
  public boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
    return store.scheduleRetry(event, delay, error);
  }

  @Override
  public boolean markDead(OutboxEvent event, String error) {
    return store.markDead(event, error);
  }

  @Override
  public Set<UUID> release(Collection<OutboxEvent> events, Duration delay) {
    return store.release(events, delay);
  }

  @Override
  public Set<UUID> renewLeases(Collection<OutboxEvent> events, Duration leaseTtl) {
    return store.renewLeases(events, leaseTtl);
  }

  @Override
  public void close() {} // the leases are in the rows: a row's lease runs out on its own
}
