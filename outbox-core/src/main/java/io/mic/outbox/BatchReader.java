package io.mic.outbox;

import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads (or claims) one worker's next batch, skipping the topics paused here and in the store, and in claim
 * mode starts keeping its leases alive at once, so a batch claimed ahead of its publication keeps them too.
 */
final class BatchReader {
  private static final Logger LOG = LoggerFactory.getLogger(OutboxDispatcher.class);

  private final DispatchSettings s;
  private final WorkerChannel channel;
  /** Read at every poll; the async dispatcher shares one set between its workers. */
  private final Set<String> pausedTopics;
  private final String ownerPrefix;
  private final AtomicLong claims = new AtomicLong();

  BatchReader(DispatchSettings s, WorkerChannel channel, Set<String> pausedTopics) {
    this.s = s;
    this.channel = channel;
    this.pausedTopics = pausedTopics;
    this.ownerPrefix = s.worker() + "@" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 16) + "#";
  }

  /** @return {@code null} when nothing is due */
  Batch next() {
    return next(List.of(), null);
  }

  /**
   * {@link #next()} while the batches {@code inFlight} are still being published or marked: without claims
   * their events are still {@code PENDING}, so the read leaves them out (in claim mode their leases already do).
   * When {@code after} is not {@code null} the read goes on after it, the last event of the previous read
   * (throughput mode: {@link OutboxStore#fetchPendingAfter}, or {@link ClaimRequest#after}).
   */
  Batch next(Collection<Batch> inFlight, OutboxEvent after) {
    long start = System.nanoTime();
    ClaimedBatch claimed = fetch(inFlight, after);
    if (claimed.events().isEmpty()) {
      claimed.close();
      LOG.trace("{}: nothing due", s.worker());
      return null;
    }
    LeaseKeeper.Lease lease = s.useClaim() ? LeaseKeeper.keep(claimed, s.leaseTtl(), s.worker(), start) : null;
    return new Batch(s, channel, claimed, start, after != null, lease);
  }

  /** The batch claimed, or read without a claim, whose outcomes are then the store's own methods. */
  private ClaimedBatch fetch(Collection<Batch> inFlight, OutboxEvent after) {
    OutboxStore store = s.store();
    PauseState shared = store.pauseState(); // the cluster-wide pauses, read at every poll
    if (shared.all()) {
      LOG.trace("{}: every topic paused in the store", s.worker());
      return new StoreBatch(store, List.of());
    }
    Set<String> paused = new HashSet<>(pausedTopics);
    paused.addAll(shared.topics());
    if (!s.useClaim()) {
      return new StoreBatch(store, after != null
          ? store.fetchPendingAfter(after, s.batchSize(), paused, eventsOf(inFlight))
          : s.hold() ? store.fetchPendingHeads(s.batchSize(), paused, idsOf(inFlight), true)
          : store.fetchPending(s.batchSize(), s.ordered(), paused, idsOf(inFlight)));
    }
    String owner = ownerPrefix + claims.incrementAndGet();
    ClaimRequest request = ClaimRequest.of(owner, s.batchSize(), s.leaseTtl()).skipping(paused);
    if (s.ordered()) {
      request = request.inRuns(s.aggregateRun());
      return store.claimBatch(s.hold() ? request.holdingOnDeadLetter() : request);
    }
    return store.claimBatch(request.after(after));
  }

  private static Set<UUID> idsOf(Collection<Batch> batches) {
    return eventsOf(batches).stream().map(OutboxEvent::id).collect(Collectors.toSet());
  }

  private static List<OutboxEvent> eventsOf(Collection<Batch> batches) {
    return batches.stream().flatMap(b -> b.events().stream()).toList();
  }
}
