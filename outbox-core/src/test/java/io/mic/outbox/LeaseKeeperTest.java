package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.testkit.OffsetClock;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The lease of one batch is renewed by one caller at a time: the background timer or the worker. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class LeaseKeeperTest {
  private final InMemoryOutboxStore memory = new InMemoryOutboxStore(new OffsetClock());

  /** Counts the renewals running at once; the first one takes its time, as over a slow network. */
  private final class SlowRenewals extends DelegatingStore {
    final CountDownLatch firstEntered = new CountDownLatch(1);
    final AtomicInteger running = new AtomicInteger();
    final AtomicInteger mostAtOnce = new AtomicInteger();
    final AtomicInteger calls = new AtomicInteger();

    SlowRenewals() {
      super(memory);
    }

    @Override public Set<UUID> renewLeases(Collection<OutboxEvent> events, Duration leaseTtl) {
      mostAtOnce.accumulateAndGet(running.incrementAndGet(), Math::max);
      try {
        if (calls.incrementAndGet() == 1) {
          firstEntered.countDown();
          sleep(300);
        }
        return super.renewLeases(events, leaseTtl);
      } finally {
        running.decrementAndGet();
      }
    }
  }

  @Test
  void theWorkersConfirmationWaitsForTheTimersRenewalInsteadOfOverlappingIt() throws Exception {
    OutboxEvent e = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();
    memory.append(e);
    Duration ttl = Duration.ofSeconds(3); // the timer's next turn is a second after its first
    List<OutboxEvent> claimed = memory.claim(ClaimRequest.of("w#1", 10, ttl));
    SlowRenewals store = new SlowRenewals();
    // claimed a lease ago by the monotonic clock: the timer renews at once, and confirm() wants to renew too
    long claimedAt = System.nanoTime() - ttl.toNanos();
    try (LeaseKeeper.Lease lease = LeaseKeeper.keep(new StoreBatch(store, claimed), ttl, "w", claimedAt)) {
      assertThat(store.firstEntered.await(5, TimeUnit.SECONDS)).isTrue();
      lease.confirm(); // on the worker's thread, while the timer's renewal waits for the store
      assertThat(store.mostAtOnce.get()).as("renewals of one batch running at once").isEqualTo(1);
      assertThat(lease.isLost(claimed.get(0))).isFalse();
      assertThat(lease.renewals()).isEqualTo(store.calls.get());
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
