package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.testkit.OffsetClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** What the dispatchers do regardless of the store: configuration, lifecycle, listener, watchdog. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class DispatcherTest {
  private final InMemoryOutboxStore store = new InMemoryOutboxStore(new OffsetClock());

  private static OutboxEvent event(String aggregateId) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic("order.created").payload("{}").build();
  }

  private OutboxDispatcher.Builder sync() {
    return OutboxDispatcher.builder().store(store).dispatchFn(e -> {});
  }

  @Test
  void defaultsArePublicConstants() {
    assertThat(OutboxDispatcher.DEFAULT_LEASE_TTL).isEqualTo(Duration.ofSeconds(3));
    assertThat(OutboxDispatcher.DEFAULT_BATCH_SIZE).isEqualTo(100);
    assertThat(OutboxDispatcher.DEFAULT_MAX_ATTEMPTS).isEqualTo(10);
    assertThat(OutboxDispatcher.DEFAULT_RETRY_INITIAL).isEqualTo(Duration.ofSeconds(1));
    assertThat(OutboxDispatcher.DEFAULT_RETRY_MAX).isEqualTo(Duration.ofMinutes(5));
    assertThat(AsyncOutboxDispatcher.DEFAULT_POLL_INTERVAL).isEqualTo(Duration.ofMillis(200));
  }

  @Test
  void builderNamesTheOptionThatIsWrong() {
    assertThatThrownBy(() -> OutboxDispatcher.builder().dispatchFn(e -> {}).build())
        .isInstanceOf(InvalidConfigurationException.class).hasMessage("store is required: .store(outboxStore)");
    assertThatThrownBy(() -> OutboxDispatcher.builder().store(store).build())
        .hasMessageStartingWith("dispatchFn is required");
    assertThatThrownBy(() -> sync().leaseTtl(Duration.ZERO).build()).hasMessage("leaseTtl must be > 0, was PT0S");
    assertThatThrownBy(() -> sync().batchSize(0).build()).hasMessage("batchSize must be between 1 and 10000, was 0");
    assertThatThrownBy(() -> sync().batchSize(10_001).build()).hasMessageContaining("was 10001");
    assertThatThrownBy(() -> sync().maxAttempts(0).build()).hasMessage("maxAttempts must be >= 1, was 0");
    assertThatThrownBy(() -> sync().retryBackoff(Duration.ofSeconds(-1), Duration.ofSeconds(1)).build())
        .hasMessage("retryBackoff initial delay must be > 0, was PT-1S");
    assertThatThrownBy(() -> sync().retryBackoff(Duration.ofSeconds(10), Duration.ofSeconds(1)).build())
        .hasMessage("retryBackoff max delay must be >= the initial delay PT10S, was PT1S");
    assertThatThrownBy(() -> sync().name("bad name").build()).hasMessageStartingWith("name must be");
    AsyncOutboxDispatcher.Builder async = AsyncOutboxDispatcher.builder().store(store).dispatchFn(e -> {});
    assertThatThrownBy(() -> async.workers(0).build()).hasMessage("workers must be between 1 and 256, was 0");
    assertThatThrownBy(() -> async.workers(1).pollInterval(Duration.ZERO).build())
        .hasMessage("pollInterval must be > 0, was PT0S");
  }

  @Test
  void severalWorkersWithoutClaimsAreRefusedInOrderedModeOnly() {
    assertThatThrownBy(() -> AsyncOutboxDispatcher.builder().store(store).dispatchFn(e -> {})
        .preserveAggregateOrder(true).workers(2).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("preserveAggregateOrder(true) with workers(2) requires useClaim(true): without claims two"
            + " workers can publish events of one aggregate at the same time and out of order");
    AsyncOutboxDispatcher.builder().store(store).dispatchFn(e -> {}).workers(3).build().close();
    AsyncOutboxDispatcher.builder().store(store).dispatchFn(e -> {}).useClaim(true).preserveAggregateOrder(true)
        .workers(4).build().close();
  }

  @Test
  void holdingAggregatesIsRefusedWithoutOrder() {
    String message = "holdAggregateOnDeadLetter(true) holds an aggregate's order, so it needs"
        + " preserveAggregateOrder(true): set it, or leave holdAggregateOnDeadLetter unset";
    assertThatThrownBy(() -> sync().holdAggregateOnDeadLetter(true).build())
        .isInstanceOf(InvalidConfigurationException.class).hasMessage(message);
    assertThatThrownBy(() -> AsyncOutboxDispatcher.builder().store(store).dispatchFn(e -> {}).useClaim(true)
        .holdAggregateOnDeadLetter(true).build()).isInstanceOf(InvalidConfigurationException.class).hasMessage(message);
    sync().preserveAggregateOrder(true).holdAggregateOnDeadLetter(true).build();
    AsyncOutboxDispatcher.builder().store(store).dispatchFn(e -> {}).useClaim(true).preserveAggregateOrder(true)
        .holdAggregateOnDeadLetter(true).build().close();
  }

  @Test
  void listenerHearsEveryOutcomeAndCannotBreakDispatch() {
    OutboxEvent ok = event("ok");
    OutboxEvent bad = event("bad");
    OutboxEvent poison = event("poison");
    store.append(List.of(ok, bad, poison));
    List<String> heard = new CopyOnWriteArrayList<>();
    OutboxListener listener = new OutboxListener() {
      @Override public void onDispatched(OutboxEvent e, Duration t) {
        heard.add("dispatched " + e.aggregateId());
        throw new IllegalStateException("listener bug");
      }

      @Override public void onRetryScheduled(OutboxEvent e, Duration delay, String error) {
        heard.add("retry " + e.aggregateId() + " " + error);
      }

      @Override public void onDeadLettered(OutboxEvent e, String error) {
        heard.add("dead " + e.aggregateId() + " " + error);
      }

      @Override public void onBatch(DispatchResult r, Duration elapsed) {
        heard.add("batch " + r);
      }
    };
    DispatchResult r = OutboxDispatcher.builder().store(store).listener(listener).useClaim(true).maxAttempts(2)
        .dispatchFn(e -> {
          if (e.aggregateId().equals("bad")) {
            throw new IllegalStateException("nope");
          }
          if (e.aggregateId().equals("poison")) {
            throw new IllegalArgumentException("never");
          }
        }).build().dispatchOnce();
    assertThat(r).isEqualTo(new DispatchResult(3, 1, 2, 0, 0, 0));
    assertThat(heard).containsExactly(
        "retry bad java.lang.IllegalStateException: nope",
        "retry poison java.lang.IllegalArgumentException: never",
        "dispatched ok",
        "batch DispatchResult[fetched=3, dispatched=1, retried=2, deadLettered=0, released=0, leaseLost=0]");
    assertThat(store.find(ok.id()).orElseThrow().status()).isEqualTo(OutboxStatus.DISPATCHED);
  }

  @Test
  void wakeUpDispatchesAtOnceDespiteALongPollInterval() throws Exception {
    List<UUID> published = new CopyOnWriteArrayList<>();
    AtomicInteger polls = new AtomicInteger();
    OutboxStore counting = new DelegatingStore(store) {
      @Override public List<OutboxEvent> fetchPending(int limit, boolean ordered, Set<String> paused) {
        polls.incrementAndGet();
        return super.fetchPending(limit, ordered, paused);
      }
    };
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(counting)
        .dispatchFn(e -> published.add(e.id())).pollInterval(Duration.ofHours(1)).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(5)).until(() -> polls.get() == 1); // found nothing, sleeps for an hour
      OutboxEvent e = event("1");
      store.append(e);
      d.wakeUp();
      await().atMost(Duration.ofSeconds(5)).until(() -> published.contains(e.id()));
    }
  }

  @Test
  void pausedDispatcherClaimsNothingAndResumesWithEverything() throws Exception {
    List<UUID> published = new CopyOnWriteArrayList<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).useClaim(true)
        .dispatchFn(e -> published.add(e.id())).pollInterval(Duration.ofMillis(20)).build()) {
      d.pause();
      assertThat(d.isPaused()).isTrue();
      d.start();
      OutboxEvent e = event("1");
      store.append(e);
      d.wakeUp();
      await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(1)).until(published::isEmpty);
      assertThat(store.find(e.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);
      d.resume();
      await().atMost(Duration.ofSeconds(5)).until(() -> published.contains(e.id()));
    }
  }

  @Test
  void aPausedTopicWaitsWhileOthersFlow() {
    OutboxEvent billing = OutboxEvent.builder().aggregate("invoice", "1").topic("billing.issued").payload("{}").build();
    OutboxEvent order = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();
    List<String> published = new CopyOnWriteArrayList<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).useClaim(true)
        .dispatchFn(e -> published.add(e.topic())).pollInterval(Duration.ofMillis(20)).build()) {
      d.pause("billing.issued");
      assertThat(d.pausedTopics()).containsExactly("billing.issued");
      d.start();
      store.append(List.of(billing, order));
      d.wakeUp();
      await().atMost(Duration.ofSeconds(5)).until(() -> published.contains("order.created"));
      assertThat(store.find(billing.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);
      assertThat(store.find(billing.id()).orElseThrow().attempts()).isZero();
      d.resume("billing.issued");
      await().atMost(Duration.ofSeconds(5)).until(() -> published.contains("billing.issued"));
    }
  }

  @Test
  void pausesInTheStoreHoldEveryDispatcherOfIt() {
    OutboxEvent billing = OutboxEvent.builder().aggregate("invoice", "1").topic("billing.issued").payload("{}").build();
    OutboxEvent order = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();
    List<String> published = new CopyOnWriteArrayList<>();
    store.pauseState(PauseState.ALL);
    try (AsyncOutboxDispatcher a = AsyncOutboxDispatcher.builder().name("a").store(store).useClaim(true)
            .dispatchFn(e -> published.add(e.topic())).pollInterval(Duration.ofMillis(20)).build();
        AsyncOutboxDispatcher b = AsyncOutboxDispatcher.builder().name("b").store(store).useClaim(true)
            .dispatchFn(e -> published.add(e.topic())).pollInterval(Duration.ofMillis(20)).build()) {
      a.start();
      b.start();
      store.append(List.of(billing, order));
      await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(1)).until(published::isEmpty);
      assertThat(store.find(order.id()).orElseThrow().attempts()).isZero();

      store.pauseState(PauseState.topics(Set.of("billing.issued")));
      await().atMost(Duration.ofSeconds(5)).until(() -> published.contains("order.created"));
      await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(1)).until(() -> published.size() == 1);
      assertThat(store.find(billing.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);

      store.pauseState(PauseState.NONE);
      await().atMost(Duration.ofSeconds(5)).until(() -> published.size() == 2);
      assertThat(published).containsExactly("order.created", "billing.issued");
    }
  }

  @Test
  void closeLetsTheInFlightBatchFinish() {
    OutboxEvent a = event("a");
    OutboxEvent b = event("b");
    store.append(List.of(a, b));
    CountDownLatch publishing = new CountDownLatch(1);
    AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).useClaim(true).dispatchFn(e -> {
      publishing.countDown();
      Thread.sleep(300);
    }).build();
    d.start();
    await().atMost(Duration.ofSeconds(5)).until(() -> publishing.getCount() == 0);
    d.close();
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 2L);
    assertThatThrownBy(d::start).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
  }

  @Test
  void closeInterruptsAHungPublishAndReleasesItsBatchUntried() {
    OutboxEvent a = event("a");
    OutboxEvent b = event("b");
    store.append(List.of(a, b));
    CountDownLatch publishing = new CountDownLatch(1);
    AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).useClaim(true)
        .shutdownTimeout(Duration.ofMillis(200)).dispatchFn(e -> {
          publishing.countDown();
          Thread.sleep(60_000); // a broker call that never returns
        }).build();
    d.start();
    await().atMost(Duration.ofSeconds(5)).until(() -> publishing.getCount() == 0);
    long t0 = System.nanoTime();
    d.close();
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(5));
    for (OutboxEvent e : List.of(a, b)) {
      OutboxEvent s = store.find(e.id()).orElseThrow();
      assertThat(s.status()).isEqualTo(OutboxStatus.PENDING);
      assertThat(s.attempts()).as("released without counting an attempt").isZero();
    }
  }

  @Test
  void watchdogReportsAPublicationThatOutlivesHalfTheLease() {
    store.append(event("slow"));
    List<String> stalls = new CopyOnWriteArrayList<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).useClaim(true).name("wd")
        .leaseTtl(Duration.ofMillis(400)).dispatchFn(e -> Thread.sleep(900))
        .listener(new OutboxListener() {
          @Override public void onPublishStalled(OutboxEvent e, String worker, Duration running) {
            stalls.add(worker + " " + e.aggregateId() + " " + (running.toMillis() >= 200));
          }
        }).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(5)).until(() -> !stalls.isEmpty());
    }
    assertThat(stalls).containsExactly("wd-dispatcher-1 slow true");
  }

  /**
   * The answer to a claim arrives after its lease ran out, and another worker took the events over
   * meanwhile: what a worker frozen (SIGSTOP, a long GC pause) while its claim-ahead was answered sees when it
   * thaws. It must find out before it publishes, and publish none of them.
   */
  @Test
  void aClaimAnsweredAfterItsLeaseRanOutPublishesNothingTakenOver() {
    OffsetClock clock = new OffsetClock();
    InMemoryOutboxStore memory = new InMemoryOutboxStore(clock);
    Duration lease = Duration.ofMillis(300);
    List<OutboxEvent> appended = List.of(event("a"), event("b"), event("c"));
    appended.forEach(memory::append);
    OutboxStore answeredLate = new DelegatingStore(memory) {
      @Override public List<OutboxEvent> claim(ClaimRequest request) {
        List<OutboxEvent> claimed = super.claim(request);
        clock.advance(lease); // in the store's time the leases run out,
        memory.claim(ClaimRequest.of("thief", 10, Duration.ofMinutes(1))); // another worker takes them over,
        try {
          Thread.sleep(lease.toMillis()); // and the answer reaches the worker a lease later: the delay itself
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return claimed;
      }
    };
    List<String> published = new CopyOnWriteArrayList<>();
    DispatchResult result = OutboxDispatcher.builder().store(answeredLate).useClaim(true).leaseTtl(lease)
        .dispatchFn(e -> published.add(e.aggregateId())).build().dispatchOnce();

    assertThat(published).as("events another worker owns, published again").isEmpty();
    assertThat(result.leaseLost()).isEqualTo(3);
    for (OutboxEvent e : appended) {
      OutboxEvent now = memory.find(e.id()).orElseThrow();
      assertThat(now.status()).isEqualTo(OutboxStatus.PROCESSING);
      assertThat(now.leaseOwner()).isEqualTo("thief");
    }
  }

  @Test
  void aFailingStoreNeverKillsTheWorker() {
    AtomicInteger failuresLeft = new AtomicInteger(2);
    OutboxStore flaky = new DelegatingStore(store) {
      @Override public List<OutboxEvent> claim(ClaimRequest request) {
        if (failuresLeft.getAndDecrement() > 0) {
          throw new IllegalStateException("database unreachable");
        }
        return super.claim(request);
      }
    };
    OutboxEvent e = event("1");
    store.append(e);
    List<Throwable> pollErrors = new CopyOnWriteArrayList<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(flaky).useClaim(true).dispatchFn(x -> {})
        .pollInterval(Duration.ofMillis(10)).listener(new OutboxListener() {
          @Override public void onPollFailed(Throwable error) {
            pollErrors.add(error);
          }
        }).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(10))
          .until(() -> store.find(e.id()).orElseThrow().status() == OutboxStatus.DISPATCHED);
    }
    assertThat(pollErrors).hasSize(2).allSatisfy(t -> assertThat(t).hasMessage("database unreachable"));
  }

  /**
   * Claim mode, a backlog of full batches and a broker that is down: the worker backs off (with jitter)
   * instead of claiming and releasing the backlog in a loop, counts no attempt, and resumes by itself.
   */
  @Test
  void aBrokerOutageBacksOffInsteadOfSpinning() {
    List<OutboxEvent> backlog = new java.util.ArrayList<>();
    for (int i = 0; i < 2_000; i++) {
      backlog.add(event("agg-" + i));
    }
    store.append(backlog);
    java.util.concurrent.atomic.AtomicBoolean down = new java.util.concurrent.atomic.AtomicBoolean(true);
    AtomicInteger publications = new AtomicInteger();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).useClaim(true).batchSize(100)
        .pollInterval(Duration.ofMillis(50)).retryBackoff(Duration.ofMillis(200), Duration.ofSeconds(2))
        .dispatchFn(e -> {
          publications.incrementAndGet();
          if (down.get()) {
            throw new PublishUnavailableException("connection refused");
          }
        }).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(5)).until(() -> publications.get() >= 1);
      // backoff ~200, 400, 800, 1600 ms: at most 5 tries in 2 s, where a loop made hundreds
      await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(3)).until(() -> publications.get() <= 5);
      down.set(false);
      await().atMost(Duration.ofSeconds(15))
          .until(() -> store.countByStatus().get(OutboxStatus.DISPATCHED) == 2_000L);
    }
    assertThat(backlog).allSatisfy(e -> assertThat(store.find(e.id()).orElseThrow().attempts()).isEqualTo(1));
  }

  /**
   * Pipelined workers claim their next batch while publishing: closing (or pausing) must hand such a
   * batch back untried and let the last marks finish, leaving nothing PROCESSING.
   */
  @Test
  void aPipelinedWorkerLeavesNothingProcessingWhenPausedOrClosed() {
    List<OutboxEvent> backlog = new java.util.ArrayList<>();
    for (int i = 0; i < 1_000; i++) {
      backlog.add(event("agg-" + i));
    }
    store.append(backlog);
    AtomicInteger published = new AtomicInteger();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).useClaim(true).batchSize(50)
        .workers(2).pollInterval(Duration.ofMillis(20)).dispatchFn(e -> {
          published.incrementAndGet();
          Thread.sleep(1);
        }).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(10)).until(() -> published.get() >= 200);
      d.pause();
      await().atMost(Duration.ofSeconds(10))
          .until(() -> store.countByStatus().get(OutboxStatus.PROCESSING) == 0L);
      long dispatched = store.countByStatus().get(OutboxStatus.DISPATCHED);
      assertThat(dispatched).isEqualTo(published.get()).isLessThan(1_000L);
      d.resume();
      await().atMost(Duration.ofSeconds(10)).until(() -> published.get() >= dispatched + 200);
    }
    Map<OutboxStatus, Long> counts = store.countByStatus();
    assertThat(counts.get(OutboxStatus.PROCESSING)).as("after close").isZero();
    assertThat(counts.get(OutboxStatus.DISPATCHED)).isEqualTo(published.get());
    assertThat(counts.get(OutboxStatus.DISPATCHED) + counts.get(OutboxStatus.PENDING)).isEqualTo(1_000L);
    assertThat(backlog).filteredOn(e -> store.find(e.id()).orElseThrow().status() == OutboxStatus.PENDING)
        .allSatisfy(e -> assertThat(store.find(e.id()).orElseThrow().attempts()).isZero());
  }

  /**
   * A pipelined worker overlaps one mark with the next publication, no more: while a mark hangs (a lock
   * wait, a slow database), the worker publishes the batch after it and then waits, so what it published
   * and has not marked, the most a crash can repeat, stays within two batches.
   */
  @ParameterizedTest(name = "useClaim: {0}")
  @ValueSource(booleans = {true, false})
  void aHangingMarkStopsAPipelinedWorkerAfterOneMoreBatch(boolean useClaim) throws Exception {
    int batch = 4;
    CountDownLatch hang = new CountDownLatch(1);
    CountDownLatch marking = new CountDownLatch(1);
    AtomicInteger marks = new AtomicInteger();
    OutboxStore hanging = new DelegatingStore(store) {
      @Override
      public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
        if (marks.incrementAndGet() == 3) {
          marking.countDown();
          try {
            hang.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        return super.markDispatched(events);
      }
    };
    List<UUID> published = new CopyOnWriteArrayList<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(hanging).useClaim(useClaim).batchSize(batch)
        .pollInterval(Duration.ofMillis(10)).dispatchFn(e -> published.add(e.id())).build()) {
      d.start();
      try {
        dispatchInGroupsWhileAMarkHangs(d, store, published, marking, hang, batch);
      } finally {
        hang.countDown(); // before close(), which lets the last marks finish
      }
    }
    assertThat(published).doesNotHaveDuplicates();
  }

  /**
   * Without claims too, a pipelined worker reads its next batch while it publishes the current one, and
   * that read leaves out the events still being published (they are PENDING until their mark), so nothing
   * goes out twice.
   */
  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void withoutClaimsAPipelinedWorkerReadsTheNextBatchWhilePublishingAndSkipsTheOneInFlight() throws Exception {
    int batch = 10;
    List<OutboxEvent> backlog = appendBacklog(3 * batch);
    CountDownLatch readAhead = new CountDownLatch(2); // the first read, then the one ahead
    List<Set<UUID>> skipped = new CopyOnWriteArrayList<>();
    OutboxStore reading = new DelegatingStore(store) {
      @Override
      public List<OutboxEvent> fetchPending(int limit, boolean ordered, Set<String> paused, Set<UUID> inFlight) {
        skipped.add(Set.copyOf(inFlight));
        List<OutboxEvent> read = super.fetchPending(limit, ordered, paused, inFlight);
        readAhead.countDown();
        return read;
      }
    };
    List<UUID> published = new CopyOnWriteArrayList<>();
    AtomicInteger readDuringFirstBatch = new AtomicInteger(-1);
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(reading).batchSize(batch)
        .pollInterval(Duration.ofMillis(10)).dispatchFn(e -> {
          if (published.isEmpty()) { // the first event waits until the next batch has been read, or 5 s
            readDuringFirstBatch.set(readAhead.await(5, TimeUnit.SECONDS) ? skipped.size() : 0);
          }
          published.add(e.id());
        }).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(20))
          .until(() -> store.countByStatus().get(OutboxStatus.DISPATCHED) == (long) backlog.size());
    }
    assertThat(readDuringFirstBatch.get()).as("reads done before the first batch was published").isEqualTo(2);
    assertThat(skipped.get(1)).as("what the read ahead left out")
        .containsExactlyInAnyOrderElementsOf(backlog.subList(0, batch).stream().map(OutboxEvent::id).toList());
    assertThat(published).doesNotHaveDuplicates().hasSize(backlog.size());
  }

  /**
   * Without claims, reads of a backlog go on after the last event read instead of stepping over the events in
   * flight again. An event that comes before that place, here a higher priority appended while the backlog
   * drains, is found by the next read from the start, made at least once per poll interval: it goes out long
   * before the backlog is drained (every event's publication takes 1 ms, so the backlog lasts about a second).
   */
  @Test
  void aReadGoingOnAfterTheLastOneStillFindsAnEarlierEventWithinAPollInterval() {
    List<OutboxEvent> backlog = appendBacklog(2_000);
    AtomicInteger readsGoingOn = new AtomicInteger();
    OutboxStore counting = new DelegatingStore(store) {
      @Override
      public List<OutboxEvent> fetchPendingAfter(OutboxEvent after, int limit, Set<String> paused,
          Collection<OutboxEvent> inFlight) {
        readsGoingOn.incrementAndGet();
        return store.fetchPendingAfter(after, limit, paused, inFlight);
      }
    };
    List<UUID> published = new CopyOnWriteArrayList<>();
    OutboxEvent urgent = OutboxEvent.builder().aggregate("order", "urgent").topic("order.created").payload("{}")
        .priority(9).build();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(counting).batchSize(10).workers(2)
        .pollInterval(Duration.ofMillis(50)).dispatchFn(e -> {
          Thread.sleep(1); // a broker that takes 1 ms per event
          published.add(e.id());
        }).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(10)).until(() -> published.size() >= 100);
      store.append(List.of(urgent));
      await().atMost(Duration.ofSeconds(20)).until(() -> published.size() == backlog.size() + 1);
    }
    assertThat(readsGoingOn.get()).as("reads that went on after the last one").isGreaterThan(10);
    assertThat(published.indexOf(urgent.id())).as("events published before the urgent one").isLessThan(1_000);
    assertThat(published).doesNotHaveDuplicates();
  }

  /**
   * A store's read going on may stop at the end of its event's priority (the JDBC store does), so it comes back
   * short while a lower priority waits: the worker publishes what it read, as it would a short claim, and reads
   * again from the start at once instead of idling a poll interval, which here is far longer than the test may
   * take. No event is read twice.
   */
  @Test
  void aReadGoingOnThatStopsAtTheEndOfAPriorityIsPublishedAndFollowedAtOnce() {
    List<OutboxEvent> events = appendTwoPriorities();
    List<UUID> read = new CopyOnWriteArrayList<>();
    OutboxStore stoppingAtItsPriority = new DelegatingStore(store) {
      @Override
      public List<OutboxEvent> fetchPendingAfter(OutboxEvent after, int limit, Set<String> paused,
          Collection<OutboxEvent> inFlight) {
        List<OutboxEvent> sameLevel = store.fetchPendingAfter(after, limit, paused, inFlight).stream()
            .filter(e -> e.priority() == after.priority()).toList();
        sameLevel.forEach(e -> read.add(e.id()));
        return sameLevel;
      }

      @Override
      public List<OutboxEvent> fetchPending(int limit, boolean ordered, Set<String> paused, Set<UUID> inFlight) {
        List<OutboxEvent> due = super.fetchPending(limit, ordered, paused, inFlight);
        due.forEach(e -> read.add(e.id()));
        return due;
      }
    };
    List<UUID> published = new CopyOnWriteArrayList<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(stoppingAtItsPriority).batchSize(10)
        .pollInterval(Duration.ofMinutes(5)).dispatchFn(e -> published.add(e.id())).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(10)).until(() -> published.size() == events.size());
    }
    assertThat(published).containsExactlyElementsOf(events.stream().map(OutboxEvent::id).toList());
    assertThat(read).as("events read, in the order read").containsExactlyElementsOf(published);
  }

  /**
   * In throughput mode claims go on after the last one too, instead of stepping over the events still leased
   * (or locked) ahead of them; a higher priority appended while the backlog drains is claimed by the next claim
   * from the start, within a poll interval, and no event is claimed twice.
   */
  @Test
  void aClaimGoingOnAfterTheLastOneStillFindsAnEarlierEventWithinAPollInterval() {
    List<OutboxEvent> backlog = appendBacklog(2_000);
    AtomicInteger claimsGoingOn = new AtomicInteger();
    AtomicInteger claimsFromTheStart = new AtomicInteger();
    OutboxStore counting = new DelegatingStore(store) {
      @Override
      public List<OutboxEvent> claim(ClaimRequest request) {
        (request.after() == null ? claimsFromTheStart : claimsGoingOn).incrementAndGet();
        return super.claim(request);
      }
    };
    List<UUID> published = new CopyOnWriteArrayList<>();
    OutboxEvent urgent = OutboxEvent.builder().aggregate("order", "urgent").topic("order.created").payload("{}")
        .priority(9).build();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(counting).useClaim(true).batchSize(10)
        .workers(2).pollInterval(Duration.ofMillis(50)).dispatchFn(e -> {
          Thread.sleep(1); // a broker that takes 1 ms per event
          published.add(e.id());
        }).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(10)).until(() -> published.size() >= 100);
      store.append(List.of(urgent));
      await().atMost(Duration.ofSeconds(20)).until(() -> published.size() == backlog.size() + 1);
    }
    assertThat(claimsGoingOn.get()).as("claims that went on after the last one").isGreaterThan(10);
    assertThat(claimsGoingOn.get()).as("claims that went on, against those from the start")
        .isGreaterThan(claimsFromTheStart.get());
    assertThat(published.indexOf(urgent.id())).as("events published before the urgent one").isLessThan(1_000);
    assertThat(published).doesNotHaveDuplicates();
    assertThat(store.countByStatus().get(OutboxStatus.DISPATCHED)).isEqualTo(backlog.size() + 1L);
  }

  /**
   * A claim going on that comes back short (its store stopped at the end of the event's priority) already
   * leased what it returned: the worker publishes it, as it does a short read, and claims from the start next, at once, although the poll interval here is far longer than the test may take.
   */
  @Test
  void aClaimGoingOnThatComesBackShortIsPublishedAndFollowedFromTheStartAtOnce() {
    List<OutboxEvent> events = appendTwoPriorities();
    OutboxStore stoppingAtItsPriority = new DelegatingStore(store) {
      @Override
      public List<OutboxEvent> claim(ClaimRequest request) {
        if (request.after() == null) {
          return super.claim(request);
        }
        int priority = request.after().priority();
        List<OutboxEvent> sameLevel = new ArrayList<>();
        for (OutboxEvent e : store.fetchPendingAfter(request.after(), request.limit(), Set.of(), List.of())) {
          if (e.priority() == priority) {
            sameLevel.add(e);
          }
        }
        return sameLevel.isEmpty() ? List.of() : super.claim(
            ClaimRequest.of(request.owner(), sameLevel.size(), request.leaseTtl()).after(request.after()));
      }
    };
    List<UUID> published = new CopyOnWriteArrayList<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(stoppingAtItsPriority).useClaim(true)
        .batchSize(10).pollInterval(Duration.ofMinutes(5)).dispatchFn(e -> published.add(e.id())).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(10)).until(() -> published.size() == events.size());
    }
    assertThat(published).containsExactlyElementsOf(events.stream().map(OutboxEvent::id).toList());
    assertThat(store.countByStatus().get(OutboxStatus.DISPATCHED)).isEqualTo(45L);
  }

  /**
   * With claims the workers' claims run at once in throughput mode too: their leases keep them apart, and a
   * lease's claim writes every row it takes, so taking turns held any number of workers to one claim at a time.
   * Here each of the first two claims waits (at most 5 s) until the other has begun.
   */
  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void withClaimsTheWorkersClaimAtOnceInThroughputMode() {
    List<OutboxEvent> backlog = appendBacklog(200);
    AtomicInteger claiming = new AtomicInteger();
    AtomicInteger mostAtOnce = new AtomicInteger();
    CountDownLatch bothBegun = new CountDownLatch(2);
    OutboxStore meetingClaims = new DelegatingStore(store) {
      @Override
      public List<OutboxEvent> claim(ClaimRequest request) {
        mostAtOnce.accumulateAndGet(claiming.incrementAndGet(), Math::max);
        try {
          bothBegun.countDown();
          bothBegun.await(5, TimeUnit.SECONDS);
          return super.claim(request);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return List.of();
        } finally {
          claiming.decrementAndGet();
        }
      }
    };
    List<UUID> published = new CopyOnWriteArrayList<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(meetingClaims).useClaim(true)
        .workers(2).batchSize(10).dispatchFn(e -> published.add(e.id())).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(20)).until(() -> published.size() == backlog.size());
    }
    assertThat(mostAtOnce.get()).as("claims running at once").isEqualTo(2);
    assertThat(published).doesNotHaveDuplicates();
    assertThat(store.countByStatus().get(OutboxStatus.DISPATCHED)).isEqualTo(backlog.size());
  }

  /**
   * Without claims the read ahead does not wait for the last batch's mark: the two run at once (a mark's
   * commit waits for the database's log flush, the read works meanwhile), and the read leaves out the batch
   * being published and the batch being marked, whose events stay {@code PENDING} until the mark commits.
   */
  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void withoutClaimsAPipelinedWorkerReadsAheadWhileTheLastMarkStillRuns() throws Exception {
    int batch = 10;
    List<OutboxEvent> backlog = appendBacklog(4 * batch);
    // the third read is the one ahead of the third batch, made while the first batch is being marked: it
    // waits until that mark has begun, and the mark waits (at most 5 s) for a read beside it
    AtomicInteger reads = new AtomicInteger();
    AtomicInteger marks = new AtomicInteger();
    AtomicBoolean firstMarkRunning = new AtomicBoolean();
    CountDownLatch firstMarkBegun = new CountDownLatch(1);
    CountDownLatch readBesideTheMark = new CountDownLatch(1);
    AtomicBoolean overlapped = new AtomicBoolean();
    List<Set<UUID>> leftOut = new CopyOnWriteArrayList<>();
    OutboxStore slowMark = new DelegatingStore(store) {
      @Override
      public List<OutboxEvent> fetchPending(int limit, boolean ordered, Set<String> paused, Set<UUID> inFlight) {
        leftOut.add(Set.copyOf(inFlight));
        read();
        return super.fetchPending(limit, ordered, paused, inFlight);
      }

      private void read() {
        if (reads.incrementAndGet() == 3) {
          try {
            firstMarkBegun.await(5, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          if (firstMarkRunning.get()) {
            readBesideTheMark.countDown();
          }
        }
      }

      @Override
      public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
        if (marks.incrementAndGet() == 1) {
          firstMarkRunning.set(true);
          firstMarkBegun.countDown();
          try {
            overlapped.set(readBesideTheMark.await(5, TimeUnit.SECONDS));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          firstMarkRunning.set(false);
        }
        return super.markDispatched(events);
      }
    };
    List<UUID> published = new CopyOnWriteArrayList<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(slowMark).batchSize(batch)
        .pollInterval(Duration.ofMillis(10)).dispatchFn(e -> published.add(e.id())).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(20))
          .until(() -> store.countByStatus().get(OutboxStatus.DISPATCHED) == (long) backlog.size());
    }
    assertThat(overlapped).as("a read ran while the first mark did").isTrue();
    assertThat(leftOut.get(2)).as("what the read beside the first mark left out: the first two batches")
        .containsExactlyInAnyOrderElementsOf(backlog.subList(0, 2 * batch).stream().map(OutboxEvent::id).toList());
    assertThat(published).doesNotHaveDuplicates().hasSize(backlog.size());
  }

  /**
   * An interrupt that is not close()'s (a user's executor, a library around the worker) reaches a pipelined
   * worker while it waits for its read ahead. Polling goes on, and so must that batch: without claims its
   * events are left out of every later read until the batch is published and marked, so a batch dropped
   * there would never go out while the dispatcher runs.
   */
  @ParameterizedTest(name = "useClaim({0})")
  @ValueSource(booleans = {false, true})
  void aStrayInterruptWhileTheReadAheadRunsLosesNoBatch(boolean claim) throws Exception {
    int batch = 5;
    List<OutboxEvent> backlog = appendBacklog(3 * batch);
    AtomicInteger reads = new AtomicInteger();
    CountDownLatch aheadStarted = new CountDownLatch(1);
    CountDownLatch aheadMayEnd = new CountDownLatch(1);
    OutboxStore slowAhead = new DelegatingStore(store) {
      @Override
      public List<OutboxEvent> fetchPending(int limit, boolean ordered, Set<String> paused, Set<UUID> inFlight) {
        holdTheSecondRead();
        return super.fetchPending(limit, ordered, paused, inFlight);
      }

      @Override
      public List<OutboxEvent> claim(ClaimRequest request) {
        holdTheSecondRead();
        return super.claim(request);
      }

      private void holdTheSecondRead() {
        if (reads.incrementAndGet() == 2) {
          aheadStarted.countDown();
          try {
            aheadMayEnd.await(10, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }
    };
    List<UUID> published = new CopyOnWriteArrayList<>();
    AtomicReference<Thread> worker = new AtomicReference<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(slowAhead).useClaim(claim)
        .batchSize(batch).leaseTtl(Duration.ofMinutes(5)).pollInterval(Duration.ofMillis(10))
        .dispatchFn(e -> {
          worker.set(Thread.currentThread());
          published.add(e.id());
        }).build()) {
      d.start();
      assertThat(aheadStarted.await(10, TimeUnit.SECONDS)).as("the read ahead started").isTrue();
      // the first batch is out; the worker then waits for the batch read ahead
      await().atMost(Duration.ofSeconds(10)).until(() -> published.size() == batch
          && worker.get().getState() == Thread.State.WAITING);
      worker.get().interrupt();
      aheadMayEnd.countDown();
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(store.countByStatus())
          .as("every event dispatched, within the lease").containsEntry(OutboxStatus.DISPATCHED, (long) backlog.size()));
    }
    assertThat(published).doesNotHaveDuplicates().hasSize(backlog.size());
  }

  /**
   * close() interrupts a worker whose publication hangs while its next batch is still being claimed. The
   * interrupt must not cost that batch its release: claimed and never published, it would keep its leases,
   * renewed in the background, for as long as the JVM runs.
   */
  @Test
  void closeReleasesTheBatchClaimedAheadEvenWhenItInterruptsTheWorker() throws Exception {
    int batch = 5;
    List<OutboxEvent> backlog = appendBacklog(2 * batch);
    AtomicInteger claims = new AtomicInteger();
    CountDownLatch aheadMayEnd = new CountDownLatch(1);
    OutboxStore slowAhead = new DelegatingStore(store) {
      @Override
      public List<OutboxEvent> claim(ClaimRequest request) {
        if (claims.incrementAndGet() == 2) {
          try {
            aheadMayEnd.await(10, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        return super.claim(request);
      }
    };
    CountDownLatch publishing = new CountDownLatch(1);
    AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(slowAhead).useClaim(true).batchSize(batch)
        .leaseTtl(Duration.ofMillis(600)).shutdownTimeout(Duration.ZERO).dispatchFn(e -> {
          publishing.countDown();
          Thread.sleep(60_000); // a broker call that never returns
        }).build();
    d.start();
    assertThat(publishing.await(10, TimeUnit.SECONDS)).isTrue();
    await().atMost(Duration.ofSeconds(10)).until(() -> claims.get() == 2); // the claim ahead runs
    d.close();
    aheadMayEnd.countDown();
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(store.countByStatus())
        .as("nothing left claimed after close").containsEntry(OutboxStatus.PENDING, (long) backlog.size()));
    for (OutboxEvent e : backlog) {
      assertThat(store.find(e.id()).orElseThrow().attempts()).as("released without counting an attempt").isZero();
    }
  }

  /**
   * close() interrupts a worker whose publication hangs while the mark of its previous batch is still running
   * (a slow database). The interrupt must not cut close() short of that mark: an application that closes its
   * pool once close() returned would otherwise make the mark fail, and the batch would be published again.
   */
  @Test
  void closeWaitsForTheLastMarkEvenWhenItInterruptsTheWorker() throws Exception {
    int batch = 2;
    List<OutboxEvent> backlog = appendBacklog(2 * batch);
    CountDownLatch marking = new CountDownLatch(1);
    OutboxStore slowMarks = new DelegatingStore(store) {
      @Override
      public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
        marking.countDown();
        try {
          Thread.sleep(1_500); // a slow database: the mark outlives the shutdown timeout
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return super.markDispatched(events);
      }
    };
    CountDownLatch hanging = new CountDownLatch(1);
    AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(slowMarks).batchSize(batch)
        .shutdownTimeout(Duration.ofMillis(200)).dispatchFn(e -> {
          if (e.aggregateId().equals(backlog.get(batch).aggregateId())) {
            hanging.countDown();
            Thread.sleep(60_000); // the second batch's broker call never returns
          }
        }).build();
    d.start();
    assertThat(marking.await(10, TimeUnit.SECONDS)).as("the first batch is being marked").isTrue();
    assertThat(hanging.await(10, TimeUnit.SECONDS)).as("the second batch is being published").isTrue();
    d.close();
    for (OutboxEvent e : backlog.subList(0, batch)) {
      assertThat(store.find(e.id()).orElseThrow().status()).as("marked before close() returned")
          .isEqualTo(OutboxStatus.DISPATCHED);
    }
    for (OutboxEvent e : backlog.subList(batch, 2 * batch)) {
      OutboxEvent s = store.find(e.id()).orElseThrow();
      assertThat(s.status()).isEqualTo(OutboxStatus.PENDING);
      assertThat(s.attempts()).as("released without counting an attempt").isZero();
    }
  }

  /** A container that stops and starts its components (a Spring context, a checkpoint and restore). */
  @Test
  void stopEndsTheWorkersAndStartRunsThemAgainUntilClose() {
    List<String> published = new CopyOnWriteArrayList<>();
    AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).name("restart")
        .pollInterval(Duration.ofMillis(20)).dispatchFn(e -> published.add(e.aggregateId())).build();
    store.append(List.of(event("a"), event("b")));
    d.start();
    await().atMost(Duration.ofSeconds(5)).until(() -> published.size() == 2);
    d.stop();
    assertThat(store.countByStatus()).as("stop() returns after the marks").containsEntry(OutboxStatus.DISPATCHED, 2L);
    await().atMost(Duration.ofSeconds(5)).alias("stop() ends the workers and the watchdog")
        .until(() -> workerThreads("restart").isEmpty());
    d.stop(); // again: nothing to do

    store.append(event("c"));
    d.start();
    await().atMost(Duration.ofSeconds(5)).until(() -> published.size() == 3);
    d.close();
    assertThat(published).containsExactly("a", "b", "c");
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 3L);
    await().atMost(Duration.ofSeconds(5)).until(() -> workerThreads("restart").isEmpty());
    assertThatThrownBy(d::start).isInstanceOf(IllegalStateException.class)
        .hasMessage("restart is closed; build a new dispatcher");
  }

  @Test
  void aDispatcherOnTheApplicationsExecutorStartsAgainOnIt() {
    ExecutorService mine = Executors.newFixedThreadPool(1);
    try {
      List<String> published = new CopyOnWriteArrayList<>();
      AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).executor(mine)
          .pollInterval(Duration.ofMillis(20)).dispatchFn(e -> published.add(e.aggregateId())).build();
      store.append(event("a"));
      d.start();
      await().atMost(Duration.ofSeconds(5)).until(() -> published.size() == 1);
      d.stop();
      assertThat(mine.isShutdown()).isFalse();
      store.append(event("b"));
      d.start(); // the executor's one thread is free again
      await().atMost(Duration.ofSeconds(5)).until(() -> published.size() == 2);
      d.close();
      assertThat(published).containsExactly("a", "b");
    } finally {
      mine.shutdownNow();
    }
  }

  /** An executor that refuses the workers fails the start, which leaves nothing running behind. */
  @Test
  void aStartThatFailsHalfWayStopsCleanly() {
    ExecutorService refusing = Executors.newFixedThreadPool(1);
    refusing.shutdown();
    AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).name("refused").executor(refusing)
        .shutdownTimeout(Duration.ofSeconds(20)).dispatchFn(e -> {}).build();
    assertThatThrownBy(d::start).isInstanceOf(java.util.concurrent.RejectedExecutionException.class);
    long t0 = System.nanoTime();
    d.stop(); // nothing started: no wait for workers that never ran
    d.close();
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(10));
    assertThat(workerThreads("refused")).isEmpty();
  }

  /** A publication that ignores stop()'s interrupt keeps its worker: a start meanwhile would run two. */
  @Test
  void startRefusesWhileAWorkerOfTheLastStartStillPublishes() throws Exception {
    store.append(event("stubborn"));
    CountDownLatch publishing = new CountDownLatch(1);
    CountDownLatch mayReturn = new CountDownLatch(1);
    List<String> published = new CopyOnWriteArrayList<>();
    AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).name("stubborn")
        .pollInterval(Duration.ofMillis(20)).shutdownTimeout(Duration.ofMillis(100)).dispatchFn(e -> {
          published.add(e.aggregateId());
          if (!e.aggregateId().equals("stubborn")) {
            return;
          }
          publishing.countDown();
          while (true) {
            try {
              if (mayReturn.await(20, TimeUnit.SECONDS)) {
                return;
              }
            } catch (InterruptedException ignored) {
              // a broker client that swallows interrupts
            }
          }
        }).build();
    d.start();
    assertThat(publishing.await(5, TimeUnit.SECONDS)).isTrue();
    d.stop(); // returns after the shutdown timeout and 5 s more, the worker still publishing
    assertThatThrownBy(d::start).isInstanceOf(IllegalStateException.class)
        .hasMessage("stubborn: 1 worker(s) of the last start still run (a publication that ignored stop()'s"
            + " interrupt, or its last marks); start again once they ended");
    mayReturn.countDown();
    await().atMost(Duration.ofSeconds(5)).until(() -> workerThreads("stubborn").isEmpty());
    store.append(event("later"));
    d.start();
    await().atMost(Duration.ofSeconds(5)).until(() -> published.contains("later"));
    d.close();
    assertThat(published).containsExactly("stubborn", "later");
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 2L);
  }

  private static List<Thread> workerThreads(String name) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().startsWith(name + "-")).toList();
  }

  /** Appends {@code count} events of as many aggregates, a0, a1, …, and returns them in that order. */
  private List<OutboxEvent> appendBacklog(int count) {
    List<OutboxEvent> backlog = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      backlog.add(event("a" + i));
    }
    store.append(backlog);
    return backlog;
  }

  private static void dispatchInGroupsWhileAMarkHangs(AsyncOutboxDispatcher d, InMemoryOutboxStore store,
      List<UUID> published, CountDownLatch marking, CountDownLatch hang, int batch) throws InterruptedException {
    // batches of two, smaller than batchSize, each published before the next is appended: the worker
    // claims them itself, never ahead
    int appended = 0;
    for (int group = 0; group < 12; group++) {
      store.append(List.of(event("a" + group), event("b" + group)));
      appended += 2;
      d.wakeUp();
      int expected = appended;
      try {
        await().atMost(Duration.ofSeconds(1)).until(() -> published.size() >= expected);
      } catch (ConditionTimeoutException e) {
        break; // the worker waits for the hanging mark
      }
    }
    assertThat(marking.await(5, TimeUnit.SECONDS)).as("the third mark hangs").isTrue();
    long unmarked = published.size() - store.countByStatus().get(OutboxStatus.DISPATCHED);
    assertThat(unmarked).as("published, not marked, while a mark hangs").isLessThanOrEqualTo(2L * batch);
    hang.countDown();
    int total = appended;
    await().atMost(Duration.ofSeconds(10))
        .until(() -> store.countByStatus().get(OutboxStatus.DISPATCHED) == (long) total);
  }

  @Test
  void aUsersExecutorIsNotShutDown() {
    ExecutorService mine = Executors.newFixedThreadPool(2);
    try {
      AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).useClaim(true).workers(2)
          .executor(mine).dispatchFn(e -> {}).build();
      d.start();
      d.close();
      assertThat(mine.isShutdown()).isFalse();
    } finally {
      mine.shutdownNow();
    }
  }

  @Test
  void workerThreadsAreNamed() throws Exception {
    List<String> names = new CopyOnWriteArrayList<>();
    store.append(event("1"));
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).name("billing")
        .dispatchFn(e -> names.add(Thread.currentThread().getName())).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(5)).until(() -> !names.isEmpty());
    }
    assertThat(names).containsExactly("billing-dispatcher-1");
  }

  /**
   * A mark that fails once (a connection reset, the first second of a failover) is tried again: giving up at
   * once would publish its whole batch again. Pipelined and not, with claims and without.
   */
  @ParameterizedTest
  @ValueSource(strings = {"no claims, pipelined", "no claims, one step at a time", "claims, pipelined",
      "claims, one step at a time"})
  void aMarkThatFailsOnceIsTriedAgainRatherThanItsBatchPublishedAgain(String mode) {
    FailingMarks flaky = new FailingMarks(store, false);
    Map<UUID, Integer> publications = drainCountingPublications(AsyncOutboxDispatcher.builder().store(flaky)
        .useClaim(mode.startsWith("claims")).pipelined(mode.endsWith("pipelined")), new OutboxListener() {});
    assertThat(flaky.failuresLeft.get()).as("the mark did fail").isNegative();
    assertThat(publications.values()).as("publications per event").containsOnly(1);
  }

  /**
   * The mark's commit went through but its answer was lost: tried again, it finds the rows already marked
   * by its own claim (or without one), counts them dispatched, and nothing is published twice. A store whose
   * marks delete the rows leaves nothing to find: without claims only a mark deletes a pending row, so the
   * events count as dispatched; with claims another worker may have taken them over and deleted them, so the
   * batch of the lost answer (10 events) counts as lease lost.
   */
  @ParameterizedTest(name = "claims: {0}, deleting marks: {1}")
  @CsvSource({"false, false, 50", "true, false, 50", "false, true, 50", "true, true, 40"})
  void aMarkWhoseAnswerWasLostCountsItsEventsDispatched(boolean useClaim, boolean deleting, int expectedDispatched) {
    AtomicInteger dispatched = new AtomicInteger();
    AtomicInteger leaseLost = new AtomicInteger();
    OutboxStore marking = deleting ? new DeletingMarks(store) : store;
    Map<UUID, Integer> publications = drainCountingPublications(
        AsyncOutboxDispatcher.builder().store(new FailingMarks(marking, true)).useClaim(useClaim),
        new OutboxListener() {
          @Override public void onDispatched(OutboxEvent event, Duration publishTime) {
            dispatched.incrementAndGet();
          }

          @Override public void onLeaseLost(OutboxEvent event) {
            leaseLost.incrementAndGet();
          }
        });
    assertThat(publications.values()).as("publications per event").containsOnly(1);
    assertThat(dispatched.get()).isEqualTo(expectedDispatched);
    assertThat(leaseLost.get()).isEqualTo(50 - expectedDispatched);
  }

  /** Appends 50 events, drains them in batches of 10 and returns how often each was published. */
  private Map<UUID, Integer> drainCountingPublications(AsyncOutboxDispatcher.Builder builder,
      OutboxListener listener) {
    appendBacklog(50);
    Map<UUID, Integer> publications = new java.util.concurrent.ConcurrentHashMap<>();
    try (AsyncOutboxDispatcher d = builder.batchSize(10).listener(listener)
        .dispatchFn(e -> publications.merge(e.id(), 1, Integer::sum)).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(10))
          .until(() -> store.countByStatus().getOrDefault(OutboxStatus.DISPATCHED, 0L) == 50);
    }
    assertThat(publications).hasSize(50);
    return publications;
  }

  /** A stop's interrupt that arrives while a failed mark waits to be tried again does not cut the mark short. */
  @Test
  void anInterruptDuringAMarksRetryDoesNotDropTheMark() {
    FailingMarks flaky = new FailingMarks(store, false);
    appendBacklog(5);
    BatchDispatchFn interruptedAfterPublishing = new BatchDispatchFn() {
      @Override public void dispatch(OutboxEvent event) {}

      @Override public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) {
        Thread.currentThread().interrupt(); // stop() interrupts the worker once its batch went out
        return Map.of();
      }
    };
    OutboxDispatcher d = OutboxDispatcher.builder().store(flaky).useClaim(true)
        .dispatchFn(interruptedAfterPublishing).build();
    try {
      assertThat(d.dispatchOnce().dispatched()).isEqualTo(5);
      assertThat(Thread.currentThread().isInterrupted()).as("the interrupt is kept for the caller").isTrue();
    } finally {
      Thread.interrupted();
    }
    assertThat(flaky.failuresLeft.get()).as("the mark did fail").isNegative();
    assertThat(store.countByStatus().get(OutboxStatus.DISPATCHED)).isEqualTo(5);
  }

  /** A store whose first mark throws: before it changed anything, or after (its answer lost). */
  private static final class FailingMarks extends DelegatingStore {
    final AtomicInteger failuresLeft = new AtomicInteger(1);
    private final boolean afterCommit;

    FailingMarks(OutboxStore store, boolean afterCommit) {
      super(store);
      this.afterCommit = afterCommit;
    }

    @Override public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
      Set<UUID> marked = afterCommit ? super.markDispatched(events) : null;
      if (failuresLeft.getAndDecrement() > 0) {
        throw new OutboxException(afterCommit ? "the connection broke before the commit's answer (injected)"
            : "the connection was reset (injected)");
      }
      return afterCommit ? marked : super.markDispatched(events);
    }
  }

  /** Marks as the wrapped store does, then no longer finds the marked rows, as a store deleting on dispatch. */
  private static final class DeletingMarks extends DelegatingStore {
    private final Set<UUID> deleted = java.util.concurrent.ConcurrentHashMap.newKeySet();

    DeletingMarks(OutboxStore store) {
      super(store);
    }

    @Override public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
      Set<UUID> marked = super.markDispatched(events);
      deleted.addAll(marked);
      return marked;
    }

    @Override public Optional<OutboxEvent> find(UUID id) {
      return deleted.contains(id) ? Optional.empty() : super.find(id);
    }
  }

  /** Appends 25 events of priority 1, then 20 of priority 0, and returns them in dispatch order. */
  private List<OutboxEvent> appendTwoPriorities() {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 45; i++) {
      events.add(OutboxEvent.builder().aggregate("order", "o" + i).topic("order.created").payload("{}")
          .priority(i < 25 ? 1 : 0).build());
    }
    store.append(events);
    return events;
  }
}
