package io.mic.outbox.faults;

import io.mic.outbox.ClaimRequest;
import io.mic.outbox.ClaimedBatch;
import io.mic.outbox.HeldAggregate;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.OutboxStore;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * The worker's store: the real JDBC store with the store-side fault points around it. Claims, and reads
 * without claims, reach {@link FaultPoint#AFTER_CLAIM} when they return events; marks reach
 * {@link FaultPoint#AFTER_ACK_BEFORE_MARK} before they are sent and flag the thread for {@link MarkCommitFence}
 * while they run.
 */
final class FaultStore implements OutboxStore {
  private final OutboxStore store;

  FaultStore(OutboxStore store) {
    this.store = store;
  }

  private List<OutboxEvent> claimed(List<OutboxEvent> events) {
    if (!events.isEmpty()) {
      FaultPoint.AFTER_CLAIM.reach();
    }
    return events;
  }

  @Override
  public List<OutboxEvent> claim(ClaimRequest request) {
    return claimed(store.claim(request));
  }

  /** The store's batch, its events past the claim's fault point and its marks past the mark's. */
  @Override
  public ClaimedBatch claimBatch(ClaimRequest request) {
    ClaimedBatch batch = store.claimBatch(request);
    claimed(batch.events());
    return new ClaimedBatch() {
      @Override public List<OutboxEvent> events() { return batch.events(); }
      @Override public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
        return marking(() -> batch.markDispatched(events));
      }
      @Override public boolean scheduleRetry(OutboxEvent e, Duration d, String error) {
        return batch.scheduleRetry(e, d, error);
      }
      @Override public boolean markDead(OutboxEvent e, String error) { return batch.markDead(e, error); }
      @Override public Set<UUID> release(Collection<OutboxEvent> e, Duration d) { return batch.release(e, d); }
      @Override public Set<UUID> renewLeases(Collection<OutboxEvent> e, Duration t) { return batch.renewLeases(e, t); }
      @Override public void close() { batch.close(); }
    };
  }

  @Override
  public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
    return marking(() -> store.markDispatched(events));
  }

  private static Set<UUID> marking(Supplier<Set<UUID>> mark) {
    FaultPoint.AFTER_ACK_BEFORE_MARK.reach();
    MarkCommitFence.MARKING.set(true);
    try {
      return mark.get();
    } finally {
      MarkCommitFence.MARKING.set(false);
    }
  }

  @Override
  public List<OutboxEvent> fetchPending(int limit, boolean ordered, Set<String> paused) {
    return claimed(store.fetchPending(limit, ordered, paused));
  }

  @Override
  public List<OutboxEvent> fetchPending(int limit, boolean ordered, Set<String> paused, Set<UUID> inFlight) {
    return claimed(store.fetchPending(limit, ordered, paused, inFlight));
  }

  @Override
  public List<OutboxEvent> fetchPendingAfter(OutboxEvent after, int limit, Set<String> paused,
      Collection<OutboxEvent> inFlight) {
    return claimed(store.fetchPendingAfter(after, limit, paused, inFlight));
  }

  @Override
  public List<OutboxEvent> fetchPendingHeads(int limit, Set<String> paused, Set<UUID> inFlight, boolean hold) {
    return claimed(store.fetchPendingHeads(limit, paused, inFlight, hold));
  }

  @Override
  public List<HeldAggregate> heldAggregates() {
    return store.heldAggregates();
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
  public Optional<OutboxEvent> find(UUID id) {
    return store.find(id);
  }

  @Override
  public Map<OutboxStatus, Long> countByStatus() {
    return store.countByStatus();
  }

  @Override
  public Optional<Duration> oldestPendingAge() {
    return store.oldestPendingAge();
  }

  @Override
  public Optional<Duration> oldestPendingAge(Set<String> exceptTopics) {
    return store.oldestPendingAge(exceptTopics);
  }

  @Override
  public Optional<Duration> oldestTransactionAge() {
    return store.oldestTransactionAge();
  }
}
