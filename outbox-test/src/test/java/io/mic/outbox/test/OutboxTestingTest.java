package io.mic.outbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DispatchResult;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.OutboxStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

class OutboxTestingTest {
  private final InMemoryOutboxStore store = new InMemoryOutboxStore();
  private final RecordingDispatchFn published = new RecordingDispatchFn();

  private static OutboxEvent event(String aggregateId, String topic) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic(topic).payload("{}").build();
  }

  private List<OutboxEvent> append(int n) {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      events.add(event(Integer.toString(i), i % 2 == 0 ? "order.created" : "order.paid"));
    }
    store.append(events);
    return events;
  }

  @Test
  void dispatchUntilEmptySumsEveryBatchAndTheRecorderAnswersQueries() {
    List<OutboxEvent> events = append(5);
    OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(published).batchSize(2).build();

    DispatchResult total = OutboxTesting.dispatchUntilEmpty(dispatcher);

    assertThat(total).isEqualTo(new DispatchResult(5, 5, 0, 0, 0, 0));
    assertThat(published.ids()).containsExactlyElementsOf(events.stream().map(OutboxEvent::id).toList());
    assertThat(published.topics())
        .containsExactly("order.created", "order.paid", "order.created", "order.paid", "order.created");
    assertThat(published.ofTopic("order.paid")).extracting(OutboxEvent::aggregateId).containsExactly("1", "3");
    assertThat(published.ofAggregate("order", "4")).extracting(OutboxEvent::id).containsExactly(events.get(4).id());
    assertThat(published.timesPublished(events.get(0).id())).isEqualTo(1);
    assertThat(published.timesPublished(UUID.randomUUID())).isZero();
    assertThat(published.count()).isEqualTo(5);
    published.clear();
    assertThat(published.count()).isZero();
  }

  @Test
  void awaitDrainedReturnsOnceARunningDispatcherPublishedEverything() throws Exception {
    List<OutboxEvent> events = append(20);
    try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(published)
        .useClaim(true).workers(2).pollInterval(Duration.ofMillis(10)).build()) {
      dispatcher.start();
      OutboxTesting.awaitDrained(store, Duration.ofSeconds(10));
      List<OutboxEvent> stored = OutboxTesting.awaitDispatched(store, Duration.ofSeconds(1),
          events.get(3).id(), events.get(17).id());
      assertThat(stored).extracting(OutboxEvent::status).containsExactly(OutboxStatus.DISPATCHED, OutboxStatus.DISPATCHED);
    }
    assertThat(published.ids()).containsExactlyInAnyOrderElementsOf(events.stream().map(OutboxEvent::id).toList());
  }

  @Test
  void awaitDrainedSaysWhatIsStillPendingWhenNothingDispatches() {
    OutboxEvent waiting = event("42", "order.created");
    store.append(waiting);

    assertThatThrownBy(() -> OutboxTesting.awaitDrained(store, Duration.ofMillis(50)))
        .isInstanceOf(AssertionError.class)
        .hasMessage("the outbox is not drained after PT0.05S: [1 PENDING, 0 PROCESSING, 0 DISPATCHED, 0 DLQ];"
            + " due now: " + waiting.id() + " (order.created, order/42, PENDING, attempts 0)");
  }

  @Test
  void awaitDispatchedNamesTheEventsNotDispatchedAndFailsAtOnceOnADeadLetter() throws Exception {
    OutboxEvent slow = event("1", "order.created");
    store.append(slow);
    assertThatThrownBy(() -> OutboxTesting.awaitDispatched(store, Duration.ofMillis(50), slow.id()))
        .isInstanceOf(AssertionError.class)
        .hasMessage("1 of 1 events not dispatched after PT0.05S: " + slow.id()
            + " (order.created, order/1, PENDING, attempts 0); outbox: [1 PENDING, 0 PROCESSING, 0 DISPATCHED, 0 DLQ]");

    FaultyPublisher refusing = FaultyPublisher.failingTimes(5, published);
    OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(refusing).maxAttempts(1).build();
    OutboxTesting.dispatchUntilEmpty(dispatcher);
    long start = System.nanoTime();
    assertThatThrownBy(() -> OutboxTesting.awaitDispatched(store, Duration.ofMinutes(1), slow.id()))
        .isInstanceOf(AssertionError.class)
        .hasMessage("1 of 1 events went to the DLQ instead of being dispatched: " + slow.id()
            + " (order.created, order/1, DLQ, attempts 1, last error: io.mic.outbox.test.FaultyPublisher$SimulatedPublishException:"
            + " simulated failure 1 of 5 for event " + slow.id() + ")");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));

    UUID unknown = UUID.randomUUID();
    assertThatThrownBy(() -> OutboxTesting.awaitDispatched(store, Duration.ofMillis(10), unknown))
        .hasMessage("no such event in the outbox: [" + unknown + "] (was the transaction that appended it committed?)");
  }

  @Test
  void awaitDeadLetteredReturnsTheDeadLettersAndFailsAtOnceOnADispatchedEvent() throws Exception {
    List<OutboxEvent> events = append(2);
    OutboxDispatcher refusing = OutboxDispatcher.builder().store(store).maxAttempts(1)
        .dispatchFn(FaultyPublisher.failingTimes(1_000, published)).build();
    OutboxTesting.dispatchUntilEmpty(refusing);

    List<OutboxEvent> dead = OutboxTesting.awaitDeadLettered(store, Duration.ofSeconds(1), events.get(0).id());
    assertThat(dead).singleElement().satisfies(e -> {
      assertThat(e.status()).isEqualTo(OutboxStatus.DLQ);
      assertThat(e.attempts()).isEqualTo(1);
    });

    OutboxEvent delivered = event("9", "order.created");
    store.append(delivered);
    OutboxTesting.dispatchUntilEmpty(OutboxDispatcher.builder().store(store).dispatchFn(published).build());
    assertThatThrownBy(() -> OutboxTesting.awaitDeadLettered(store, Duration.ofMinutes(1), delivered.id()))
        .isInstanceOf(AssertionError.class)
        .hasMessageStartingWith("event " + delivered.id() + " was dispatched, so it will never be dead-lettered");
  }

  @Test
  void failingTimesFailsEachEventThatOftenThenPublishesIt() throws Exception {
    List<OutboxEvent> events = append(2);
    FaultyPublisher flaky = FaultyPublisher.failingTimes(2, published);
    try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(flaky)
        .retryBackoff(Duration.ofMillis(5), Duration.ofMillis(20)).pollInterval(Duration.ofMillis(10)).build()) {
      dispatcher.start();
      OutboxTesting.awaitDispatched(store, Duration.ofSeconds(10), events.get(0).id(), events.get(1).id());
    }
    for (OutboxEvent e : events) {
      assertThat(flaky.calls(e.id())).isEqualTo(3);
      assertThat(store.find(e.id()).orElseThrow().attempts()).isEqualTo(3);
    }
    assertThat(flaky.faults()).isEqualTo(4);
    assertThat(published.count()).isEqualTo(2);
  }

  @Test
  void unavailableForCostsNoAttemptAndPublishesOnceTheOutageIsOver() throws Exception {
    OutboxEvent e = event("1", "order.created");
    store.append(e);
    FaultyPublisher down = FaultyPublisher.unavailableFor(Duration.ofMillis(300), published);
    long start = System.nanoTime();
    try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(down)
        .useClaim(true).retryBackoff(Duration.ofMillis(10), Duration.ofMillis(50))
        .pollInterval(Duration.ofMillis(10)).build()) {
      dispatcher.start();
      OutboxTesting.awaitDispatched(store, Duration.ofSeconds(10), e.id());
    }
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
    assertThat(down.faults()).isGreaterThanOrEqualTo(1).isEqualTo(down.calls(e.id()) - 1);
    OutboxEvent stored = store.find(e.id()).orElseThrow();
    assertThat(stored.attempts()).as("released outages take their attempt back").isEqualTo(1);
    assertThat(published.timesPublished(e.id())).isEqualTo(1);
  }

  @Test
  void hangingPastHalfTheLeaseIsReportedAsStalledAndStillPublishedOnce() throws Exception {
    OutboxEvent e = event("1", "order.created");
    store.append(e);
    List<UUID> stalled = new CopyOnWriteArrayList<>();
    OutboxListener listener = new OutboxListener() {
      @Override
      public void onPublishStalled(OutboxEvent event, String worker, Duration running) {
        stalled.add(event.id());
      }
    };
    FaultyPublisher slow = FaultyPublisher.hanging(Duration.ofMillis(900), published);
    try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(slow)
        .useClaim(true).leaseTtl(Duration.ofMillis(600)).listener(listener)
        .pollInterval(Duration.ofMillis(10)).build()) {
      dispatcher.start();
      OutboxTesting.awaitDispatched(store, Duration.ofSeconds(10), e.id());
    }
    assertThat(stalled).contains(e.id());
    assertThat(published.timesPublished(e.id())).isEqualTo(1);
    assertThat(slow.calls(e.id())).isEqualTo(1);
  }

  @Test
  void awaitCountWaitsForThePublicationsOrSaysHowManyCame() throws Exception {
    List<OutboxEvent> events = append(3);
    try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(published)
        .pollInterval(Duration.ofMillis(10)).build()) {
      dispatcher.start();
      assertThat(published.awaitCount(3, Duration.ofSeconds(10))).hasSize(3);
    }
    assertThatThrownBy(() -> published.awaitCount(4, Duration.ofMillis(20)))
        .isInstanceOf(AssertionError.class)
        .hasMessageStartingWith("expected at least 4 publications within PT0.02S, got 3: [")
        .hasMessageContaining(events.get(2).id() + " (order.created)");
  }

  @Test
  void faultyPublishersRefuseNonsense() {
    assertThatThrownBy(() -> FaultyPublisher.failingTimes(-1, published))
        .hasMessage("times must be >= 0, was -1");
    assertThatThrownBy(() -> FaultyPublisher.hanging(Duration.ZERO, published))
        .hasMessage("duration must be > 0, was PT0S");
  }
}
