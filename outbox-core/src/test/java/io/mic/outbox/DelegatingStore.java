package io.mic.outbox;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

/** Forwards every call; tests override one method to inject a failure. */
class DelegatingStore implements OutboxStore {
  private final OutboxStore d;

  DelegatingStore(OutboxStore d) {
    this.d = d;
  }

  @Override public List<OutboxEvent> fetchPending(int l, boolean o, Set<String> p) { return d.fetchPending(l, o, p); }
  @Override public List<OutboxEvent> claim(ClaimRequest r) { return d.claim(r); }
  @Override public Set<UUID> markDispatched(Collection<OutboxEvent> e) { return d.markDispatched(e); }
  @Override public boolean scheduleRetry(OutboxEvent e, Duration x, String s) { return d.scheduleRetry(e, x, s); }
  @Override public boolean markDead(OutboxEvent e, String s) { return d.markDead(e, s); }
  @Override public Set<UUID> release(Collection<OutboxEvent> e, Duration x) { return d.release(e, x); }
  @Override public Set<UUID> renewLeases(Collection<OutboxEvent> e, Duration x) { return d.renewLeases(e, x); }
  @Override public Optional<OutboxEvent> find(UUID id) { return d.find(id); }
  @Override public Map<OutboxStatus, Long> countByStatus() { return d.countByStatus(); }
  @Override public Optional<Duration> oldestPendingAge() { return d.oldestPendingAge(); }
}
