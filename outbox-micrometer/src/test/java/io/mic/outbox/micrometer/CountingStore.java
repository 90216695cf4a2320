package io.mic.outbox.micrometer;

import io.mic.outbox.ClaimRequest;
import io.mic.outbox.HeldAggregate;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.OutboxStore;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

/** A real store behind a wrapper that counts the reads the gauges make, and fails them on request. */
final class CountingStore implements OutboxStore {
  final AtomicInteger countByStatus = new AtomicInteger();
  final AtomicInteger oldestPendingAge = new AtomicInteger();
  final AtomicInteger oldestTransactionAge = new AtomicInteger();
  volatile boolean failReads;
  private final OutboxStore delegate;

  CountingStore(OutboxStore delegate) {
    this.delegate = delegate;
  }

  @Override
  public Map<OutboxStatus, Long> countByStatus() {
    countByStatus.incrementAndGet();
    if (failReads) {
      throw new OutboxException("database down");
    }
    return delegate.countByStatus();
  }

  @Override
  public Optional<Duration> oldestPendingAge() {
    oldestPendingAge.incrementAndGet();
    if (failReads) {
      throw new OutboxException("database down");
    }
    return delegate.oldestPendingAge();
  }

  @Override
  public Optional<Duration> oldestTransactionAge() {
    oldestTransactionAge.incrementAndGet();
    if (failReads) {
      throw new OutboxException("database down");
    }
    return delegate.oldestTransactionAge();
  }

  @Override
  public OptionalLong deadTuples() {
    return delegate.deadTuples();
  }

  @Override
  public List<HeldAggregate> heldAggregates() {
    if (failReads) {
      throw new OutboxException("database down");
    }
    return delegate.heldAggregates();
  }

  @Override
  public List<OutboxEvent> fetchPending(int limit, boolean preserveAggregateOrder, Set<String> pausedTopics) {
    return delegate.fetchPending(limit, preserveAggregateOrder, pausedTopics);
  }

  @Override
  public List<OutboxEvent> claim(ClaimRequest request) {
    return delegate.claim(request);
  }

  @Override
  public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
    return delegate.markDispatched(events);
  }

  @Override
  public boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
    return delegate.scheduleRetry(event, delay, error);
  }

  @Override
  public boolean markDead(OutboxEvent event, String error) {
    return delegate.markDead(event, error);
  }

  @Override
  public Set<UUID> release(Collection<OutboxEvent> events, Duration delay) {
    return delegate.release(events, delay);
  }

  @Override
  public Set<UUID> renewLeases(Collection<OutboxEvent> events, Duration leaseTtl) {
    return delegate.renewLeases(events, leaseTtl);
  }

  @Override
  public Optional<OutboxEvent> find(UUID id) {
    return delegate.find(id);
  }
}
