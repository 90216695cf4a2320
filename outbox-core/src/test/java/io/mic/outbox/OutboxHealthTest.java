package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class OutboxHealthTest {
  private static final Instant T0 = Instant.parse("2026-09-29T08:00:00Z");

  private final SettableClock clock = new SettableClock(T0);
  private final InMemoryOutboxStore store = new InMemoryOutboxStore(clock);
  private final OutboxHealth health = OutboxHealth.builder().store(store).clock(clock).build();

  private static OutboxEvent event(String topic, String aggregateId) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic(topic).payload("{}").build();
  }

  /** Publishes everything except topic {@code order.failed}, which always fails. */
  private OutboxDispatcher dispatcher() {
    return OutboxDispatcher.builder().store(store).maxAttempts(2).listener(health)
        .dispatchFn(e -> {
          if (e.topic().equals("order.failed")) {
            throw new IllegalStateException("rejected");
          }
        })
        .build();
  }

  @Test
  void reportsExactValuesAfterDispatchRetryAndDeadLetter() {
    store.append(List.of(event("order.created", "1"), event("order.created", "2"), event("order.failed", "3")));

    OutboxHealth.Snapshot before = health.snapshot();
    assertThat(before.takenAt()).isEqualTo(T0);
    assertThat(before.lag()).contains(Duration.ZERO);
    assertThat(before.pending()).isEqualTo(3);
    assertThat(before.dlq()).isZero();
    assertThat(before.lastSuccessfulDispatch()).isEmpty();
    assertThat(before.sinceLastDispatch()).isEmpty();

    OutboxDispatcher dispatcher = dispatcher();
    clock.advance(Duration.ofSeconds(10));
    assertThat(dispatcher.dispatchOnce()).isEqualTo(new DispatchResult(3, 2, 1, 0, 0, 0));

    OutboxHealth.Snapshot afterRetry = health.snapshot();
    // the retry-waiting event counts; third of a batch appended at T0, it arrived 2 µs after the first
    assertThat(afterRetry.lag()).contains(Duration.ofSeconds(10).minusNanos(2_000));
    assertThat(afterRetry.pending()).isEqualTo(1);
    assertThat(afterRetry.dlq()).isZero();
    assertThat(afterRetry.lastSuccessfulDispatch()).contains(T0.plusSeconds(10));
    assertThat(afterRetry.dispatched()).isEqualTo(2);
    assertThat(afterRetry.retried()).isEqualTo(1);
    assertThat(afterRetry.deadLettered()).isZero();

    clock.advance(Duration.ofHours(1));
    assertThat(dispatcher.dispatchOnce()).isEqualTo(new DispatchResult(1, 0, 0, 1, 0, 0));

    OutboxHealth.Snapshot afterDlq = health.snapshot();
    assertThat(afterDlq.takenAt()).isEqualTo(T0.plusSeconds(3610));
    assertThat(afterDlq.lag()).isEmpty();
    assertThat(afterDlq.pending()).isZero();
    assertThat(afterDlq.dlq()).isEqualTo(1);
    assertThat(afterDlq.lastSuccessfulDispatch()).contains(T0.plusSeconds(10));
    assertThat(afterDlq.sinceLastDispatch()).contains(Duration.ofHours(1));
    assertThat(afterDlq.dispatched()).isEqualTo(2);
    assertThat(afterDlq.retried()).isEqualTo(1);
    assertThat(afterDlq.deadLettered()).isEqualTo(1);
    assertThat(afterDlq.leaseLost()).isZero();
    assertThat(afterDlq.pollFailures()).isZero();
  }

  @Test
  void isHealthyComparesTheLagWithTheThreshold() {
    store.append(event("order.created", "1"));
    clock.advance(Duration.ofSeconds(30));

    OutboxHealth.Snapshot s = health.snapshot();
    assertThat(s.lag()).contains(Duration.ofSeconds(30));
    assertThat(s.isHealthy(Duration.ofSeconds(30))).isTrue();
    assertThat(s.isHealthy(Duration.ofSeconds(31))).isTrue();
    assertThat(s.isHealthy(Duration.ofSeconds(30).minusNanos(1000))).isFalse();
    assertThat(s.isHealthy(Duration.ZERO)).isFalse();

    dispatcher().dispatchOnce();
    OutboxHealth.Snapshot empty = health.snapshot();
    assertThat(empty.lag()).isEmpty();
    assertThat(empty.isHealthy(Duration.ZERO)).isTrue();
    assertThatThrownBy(() -> empty.isHealthy(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("maxLag must be >= 0, was PT-1S");
  }

  @Test
  void dlqRowsDoNotMakeTheOutboxUnhealthy() {
    store.append(event("order.failed", "1"));
    OutboxDispatcher dispatcher = dispatcher();
    dispatcher.dispatchOnce();
    clock.advance(Duration.ofHours(1));
    dispatcher.dispatchOnce();

    OutboxHealth.Snapshot s = health.snapshot();
    assertThat(s.dlq()).isEqualTo(1);
    assertThat(s.isHealthy(Duration.ZERO)).isTrue();
  }

  @Test
  void heldAggregatesAreCountedButDoNotMakeTheOutboxUnhealthy() {
    OutboxEvent dead = event("order.failed", "1");
    store.append(List.of(dead, event("order.failed", "1"), event("order.failed", "1")));
    OutboxDispatcher.builder().store(store).dispatchFn(e -> {
      throw new IllegalArgumentException("poison");
    }).maxAttempts(1).preserveAggregateOrder(true).holdAggregateOnDeadLetter(true).listener(health).build()
        .dispatchOnce();

    OutboxHealth.Snapshot s = health.snapshot();
    assertThat(s.dlq()).isEqualTo(1);
    assertThat(s.heldAggregates()).isEqualTo(1);
    assertThat(s.pending()).isEqualTo(2);
    assertThat(s.isHealthy(Duration.ofMinutes(1))).isTrue();
  }

  @Test
  void readsEachStoreCountOncePerSnapshot() {
    CountingStore counting = new CountingStore(store);
    OutboxHealth h = OutboxHealth.builder().store(counting).clock(clock).build();
    store.append(event("order.created", "1"));

    h.snapshot();
    assertThat(counting.countByStatus.get()).isEqualTo(1);
    assertThat(counting.oldestPendingAge.get()).isEqualTo(1);
    assertThat(counting.oldestTransactionAge.get()).isEqualTo(1);
    h.snapshot().isHealthy(Duration.ofMinutes(1));
    assertThat(counting.countByStatus.get()).isEqualTo(2);
    assertThat(counting.oldestPendingAge.get()).isEqualTo(2);
    assertThat(counting.oldestTransactionAge.get()).isEqualTo(2);
    assertThat(counting.others.get()).isZero();
  }

  @Test
  void theInMemoryStoreHasNoTransactionToReport() {
    store.append(event("order.created", "1"));
    clock.advance(Duration.ofMinutes(3));

    assertThat(store.oldestTransactionAge()).isEmpty();
    OutboxHealth.Snapshot s = health.snapshot();
    assertThat(s.oldestTransactionAge()).isEmpty();
    assertThat(s.lag()).contains(Duration.ofMinutes(3));
  }

  @Test
  void theSnapshotCarriesTheStoresOldestTransactionAgeWithoutJudgingIt() {
    CountingStore reporting = new CountingStore(store);
    reporting.transactionAge = Optional.of(Duration.ofMinutes(42));
    OutboxHealth h = OutboxHealth.builder().store(reporting).clock(clock).build();

    OutboxHealth.Snapshot s = h.snapshot();
    assertThat(s.oldestTransactionAge()).contains(Duration.ofMinutes(42));
    assertThat(s.lag()).isEmpty();
    assertThat(s.isHealthy(Duration.ZERO)).as("only the lag decides").isTrue();
  }

  @Test
  void theSnapshotConstructorKeepsItsValues() {
    OutboxHealth.Snapshot s = new OutboxHealth.Snapshot(T0, Optional.of(Duration.ofSeconds(5)), Optional.empty(), 2, 1, 4,
        Optional.of(T0.minusSeconds(1)), 7, 3, 1, 0, 0);
    assertThat(s.oldestTransactionAge()).isEmpty();
    assertThat(s.lag()).contains(Duration.ofSeconds(5));
    assertThat(s.pending()).isEqualTo(2);
    assertThat(s.dlq()).isEqualTo(1);
    assertThat(s.heldAggregates()).isEqualTo(4);
    assertThat(s.sinceLastDispatch()).contains(Duration.ofSeconds(1));
    assertThat(s.dispatched()).isEqualTo(7);
    assertThat(s.retried()).isEqualTo(3);
    assertThat(s.deadLettered()).isEqualTo(1);
    assertThatThrownBy(() -> new OutboxHealth.Snapshot(T0, Optional.empty(), null, 0, 0, 0, Optional.empty(),
        0, 0, 0, 0, 0)).isInstanceOf(NullPointerException.class).hasMessage("oldestTransactionAge");
  }

  @Test
  void aStoreThatCannotBeReadMakesSnapshotThrow() {
    CountingStore broken = new CountingStore(store);
    broken.failCounts = true;
    OutboxHealth h = OutboxHealth.builder().store(broken).build();
    assertThatThrownBy(h::snapshot).isInstanceOf(OutboxException.class).hasMessage("database down");
  }

  @Test
  void countsWhatSeveralAsyncWorkersDo() {
    CountingStore flaky = new CountingStore(store);
    flaky.failNextClaims.set(1);
    for (int i = 0; i < 200; i++) {
      store.append(event("order.created", "agg-" + i));
    }
    try (AsyncOutboxDispatcher async = AsyncOutboxDispatcher.builder().store(flaky).dispatchFn(e -> {})
        .useClaim(true).workers(4).batchSize(10).pollInterval(Duration.ofMillis(10)).listener(health).build()) {
      async.start();
      await().atMost(Duration.ofSeconds(20)).until(() -> health.snapshot().pending() == 0);
    }
    OutboxHealth.Snapshot s = health.snapshot();
    assertThat(s.dispatched()).isEqualTo(200);
    assertThat(s.pollFailures()).isEqualTo(1);
    assertThat(s.lastSuccessfulDispatch()).contains(T0);
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 200L);
  }

  @Test
  void builderNamesTheOptionThatIsWrong() {
    assertThatThrownBy(() -> OutboxHealth.builder().build())
        .isInstanceOf(InvalidConfigurationException.class).hasMessage("store is required: .store(outboxStore)");
    assertThatThrownBy(() -> OutboxHealth.builder().store(store).clock(null).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("clock must not be null: leave it unset for the system clock");
  }

  /** A clock that only moves when the test says so. */
  static final class SettableClock extends Clock {
    private volatile Instant now;

    SettableClock(Instant start) {
      this.now = start;
    }

    void advance(Duration d) {
      now = now.plus(d);
    }

    @Override
    public Instant instant() {
      return now;
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      throw new UnsupportedOperationException("UTC only");
    }
  }

  /** Delegates to a real store, counting the reads health makes and failing on request. */
  static final class CountingStore implements OutboxStore {
    final AtomicInteger countByStatus = new AtomicInteger();
    final AtomicInteger oldestPendingAge = new AtomicInteger();
    final AtomicInteger oldestTransactionAge = new AtomicInteger();
    final AtomicInteger others = new AtomicInteger();
    final AtomicInteger failNextClaims = new AtomicInteger();
    volatile boolean failCounts;
    /** What {@link #oldestTransactionAge()} reports; the in-memory store has no transactions. */
    volatile Optional<Duration> transactionAge = Optional.empty();
    private final OutboxStore delegate;

    CountingStore(OutboxStore delegate) {
      this.delegate = delegate;
    }

    @Override
    public List<OutboxEvent> fetchPending(int limit, boolean preserveAggregateOrder, Set<String> pausedTopics) {
      others.incrementAndGet();
      return delegate.fetchPending(limit, preserveAggregateOrder, pausedTopics);
    }

    @Override
    public List<OutboxEvent> claim(ClaimRequest request) {
      others.incrementAndGet();
      if (failNextClaims.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
        throw new OutboxException("database down");
      }
      return delegate.claim(request);
    }

    @Override
    public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
      others.incrementAndGet();
      return delegate.markDispatched(events);
    }

    @Override
    public boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
      others.incrementAndGet();
      return delegate.scheduleRetry(event, delay, error);
    }

    @Override
    public boolean markDead(OutboxEvent event, String error) {
      others.incrementAndGet();
      return delegate.markDead(event, error);
    }

    @Override
    public Set<UUID> release(Collection<OutboxEvent> events, Duration delay) {
      others.incrementAndGet();
      return delegate.release(events, delay);
    }

    @Override
    public Set<UUID> renewLeases(Collection<OutboxEvent> events, Duration leaseTtl) {
      others.incrementAndGet();
      return delegate.renewLeases(events, leaseTtl);
    }

    @Override
    public Optional<OutboxEvent> find(UUID id) {
      others.incrementAndGet();
      return delegate.find(id);
    }

    @Override
    public Map<OutboxStatus, Long> countByStatus() {
      countByStatus.incrementAndGet();
      if (failCounts) {
        throw new OutboxException("database down");
      }
      return delegate.countByStatus();
    }

    @Override
    public Optional<Duration> oldestPendingAge() {
      oldestPendingAge.incrementAndGet();
      return delegate.oldestPendingAge();
    }

    @Override
    public Optional<Duration> oldestTransactionAge() {
      oldestTransactionAge.incrementAndGet();
      return transactionAge;
    }
  }
}
