package io.mic.outbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.ClaimRequest;
import io.mic.outbox.ClaimedBatch;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.HeldAggregate;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.OutboxStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The rules of held aggregates ({@code holdAggregateOnDeadLetter(true)}), part of {@link OutboxStoreContractTest}:
 * every store runs them. A dead event holds its aggregate's events until it is redriven (it goes first) or
 * purged (the rest go on in order); other aggregates go on; without holding, nothing changes.
 */
public interface HeldAggregatesContract {

  /** The store of the current test. */
  OutboxStore storeUnderTest();

  /** Appends and commits the events, in this order. */
  void appendEvents(List<OutboxEvent> events);

  /** Moves the store's clock forward by {@code d}. */
  void elapseStoreClock(Duration d);

  /**
   * Puts a dead letter back to {@code PENDING} as an operator would; a store without operator tools keeps this
   * default, which switches the test off.
   */
  default void redriveDeadLetter(UUID id) {
    Assumptions.abort("this store has no operator tools to redrive a dead letter");
  }

  /** Deletes a dead letter as an operator would; see {@link #redriveDeadLetter}. */
  default void purgeDeadLetter(UUID id) {
    Assumptions.abort("this store has no operator tools to purge a dead letter");
  }

  private static OutboxEvent event(String aggregateId, int n) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic("order.changed")
        .payload("{\"order\":\"" + aggregateId + "\",\"n\":" + n + "}").build();
  }

  /** Publishes what {@code published} records, failing (to the DLQ at once) the events of {@code poison}. */
  private OutboxDispatcher.Builder dispatcher(List<OutboxEvent> published, Set<UUID> poison) {
    DispatchFn fn = e -> {
      if (poison.contains(e.id())) {
        throw new IllegalArgumentException("poison");
      }
      published.add(e);
    };
    return OutboxDispatcher.builder().store(storeUnderTest()).dispatchFn(fn).preserveAggregateOrder(true)
        .maxAttempts(1);
  }

  private static void drain(OutboxDispatcher d) {
    for (int i = 0; i < 20 && !d.dispatchOnce().isEmpty(); i++) {
      // until nothing is due
    }
  }

  private static List<UUID> ids(List<OutboxEvent> events) {
    return events.stream().map(OutboxEvent::id).toList();
  }

  @ParameterizedTest(name = "useClaim={0}")
  @ValueSource(booleans = {true, false})
  default void aDeadEventHoldsItsAggregatesLaterEventsAndOthersGoOn(boolean useClaim) {
    OutboxEvent a1 = event("a", 1), a2 = event("a", 2), a3 = event("a", 3), b1 = event("b", 1);
    appendEvents(List.of(a1, a2, a3, b1));
    List<OutboxEvent> published = new CopyOnWriteArrayList<>();
    OutboxDispatcher d = dispatcher(published, Set.of(a1.id())).useClaim(useClaim).aggregateRun(10)
        .holdAggregateOnDeadLetter(true).build();

    drain(d);
    OutboxEvent b2 = event("b", 2);
    appendEvents(List.of(b2));
    drain(d);

    assertThat(storeUnderTest().find(a1.id()).orElseThrow().status()).isEqualTo(OutboxStatus.DLQ);
    assertThat(ids(published)).containsExactly(b1.id(), b2.id());
    assertThat(storeUnderTest().find(a2.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(storeUnderTest().heldAggregates()).containsExactly(new HeldAggregate("order", "a", a1.id(), 2));
    try (ClaimedBatch holding = storeUnderTest().claimBatch(ClaimRequest.of("w", 10, Duration.ofMinutes(1))
        .inRuns(10).holdingOnDeadLetter())) {
      assertThat(holding.events()).as("a claim that holds").isEmpty();
    }
    elapseStoreClock(Duration.ofMinutes(5)); // events behind a failed head of a run went back for a moment
    assertThat(storeUnderTest().fetchPendingHeads(10, Set.of(), Set.of(), true)).as("a read that holds").isEmpty();
    assertThat(ids(storeUnderTest().fetchPendingHeads(10, Set.of(), Set.of(), false)))
        .as("a read that does not hold").containsExactly(a2.id());
  }

  @Test
  default void withoutHoldingADeadEventReleasesItsAggregate() {
    OutboxEvent a1 = event("a", 1), a2 = event("a", 2);
    appendEvents(List.of(a1, a2));
    List<OutboxEvent> published = new CopyOnWriteArrayList<>();
    OutboxDispatcher d = dispatcher(published, Set.of(a1.id())).useClaim(true).aggregateRun(1).build();

    d.dispatchOnce();
    assertThat(storeUnderTest().heldAggregates()).as("a2 waits for the next claim only")
        .containsExactly(new HeldAggregate("order", "a", a1.id(), 1));
    drain(d);

    assertThat(ids(published)).containsExactly(a2.id());
    assertThat(storeUnderTest().heldAggregates()).isEmpty();
  }

  @ParameterizedTest(name = "useClaim={0}")
  @ValueSource(booleans = {true, false})
  default void aRedrivenDeadEventGoesFirstThenTheWaitingOnesInOrder(boolean useClaim) {
    OutboxEvent a1 = event("a", 1), a2 = event("a", 2), a3 = event("a", 3);
    appendEvents(List.of(a1, a2, a3));
    List<OutboxEvent> published = new CopyOnWriteArrayList<>();
    Set<UUID> poison = new java.util.concurrent.ConcurrentSkipListSet<>(Set.of(a1.id()));
    OutboxDispatcher d = dispatcher(published, poison).useClaim(useClaim).aggregateRun(10)
        .holdAggregateOnDeadLetter(true).build();
    drain(d);
    assertThat(published).isEmpty();

    poison.clear(); // the cause is fixed
    redriveDeadLetter(a1.id());
    assertThat(storeUnderTest().heldAggregates()).isEmpty();
    elapseStoreClock(Duration.ofMinutes(5)); // the events behind a failed head of a run went back for a moment
    drain(d);

    assertThat(ids(published)).containsExactly(a1.id(), a2.id(), a3.id());
  }

  @ParameterizedTest(name = "useClaim={0}")
  @ValueSource(booleans = {true, false})
  default void aPurgedDeadEventLetsTheWaitingOnesGoOnInOrder(boolean useClaim) {
    OutboxEvent a1 = event("a", 1), a2 = event("a", 2), a3 = event("a", 3);
    appendEvents(List.of(a1, a2, a3));
    List<OutboxEvent> published = new CopyOnWriteArrayList<>();
    OutboxDispatcher d = dispatcher(published, Set.of(a1.id())).useClaim(useClaim).aggregateRun(10)
        .holdAggregateOnDeadLetter(true).build();
    drain(d);

    purgeDeadLetter(a1.id());
    elapseStoreClock(Duration.ofMinutes(5));
    drain(d);

    assertThat(ids(published)).containsExactly(a2.id(), a3.id());
    assertThat(storeUnderTest().find(a1.id())).isEmpty();
  }

  /**
   * Two events dead before holding began: the aggregate waits, the first redriven included, until the second
   * is redriven too; then all go in order.
   */
  @Test
  default void anAggregateWithTwoDeadEventsWaitsUntilBothAreRedriven() {
    OutboxEvent a1 = event("a", 1), a2 = event("a", 2);
    appendEvents(List.of(a1, a2));
    List<OutboxEvent> published = new CopyOnWriteArrayList<>();
    drain(dispatcher(published, Set.of(a1.id(), a2.id())).useClaim(true).build());
    OutboxEvent a3 = event("a", 3), a4 = event("a", 4);
    appendEvents(List.of(a3, a4));
    OutboxDispatcher holding = dispatcher(published, Set.of()).useClaim(true).aggregateRun(10)
        .holdAggregateOnDeadLetter(true).build();

    redriveDeadLetter(a1.id());
    drain(holding);
    assertThat(published).isEmpty();
    assertThat(storeUnderTest().heldAggregates()).containsExactly(new HeldAggregate("order", "a", a2.id(), 3));

    redriveDeadLetter(a2.id());
    drain(holding);
    assertThat(ids(published)).containsExactly(a1.id(), a2.id(), a3.id(), a4.id());
    assertThat(storeUnderTest().heldAggregates()).isEmpty();
  }

  @Test
  default void heldAggregatesListsEachByItsOldestDeadEventOldestFirst() {
    List<OutboxEvent> events = new ArrayList<>();
    for (String aggregate : List.of("c", "a", "b")) {
      events.add(event(aggregate, 1));
      events.add(event(aggregate, 2));
    }
    OutboxEvent dOnlyDead = event("d", 1);
    events.add(dOnlyDead);
    appendEvents(events);
    Set<UUID> poison = Set.of(events.get(0).id(), events.get(2).id(), dOnlyDead.id());
    drain(dispatcher(new ArrayList<>(), poison).useClaim(true).holdAggregateOnDeadLetter(true).build());

    assertThat(storeUnderTest().heldAggregates()).as("d has nothing waiting; b's head went out")
        .containsExactly(new HeldAggregate("order", "c", events.get(0).id(), 1),
            new HeldAggregate("order", "a", events.get(2).id(), 1));
  }
}
