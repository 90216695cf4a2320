package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.testkit.OffsetClock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Why an event went back untried, as the listener hears it, and what a stop does not count as. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ReleaseTest {
  private final InMemoryOutboxStore store = new InMemoryOutboxStore(new OffsetClock());
  private final List<String> reasons = new CopyOnWriteArrayList<>();
  private final OutboxListener listener = new OutboxListener() {
    @Override public void onReleased(OutboxEvent event, ReleaseReason reason) {
      reasons.add(event.aggregateId() + " " + reason);
    }
  };

  private static OutboxEvent event(String aggregateId) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic("order.created").payload("{}").build();
  }

  /** A publisher that answers each event with the failure {@code failures} gives it ({@code null}: acknowledged). */
  private static BatchDispatchFn answering(java.util.function.Function<OutboxEvent, Exception> failures) {
    return new BatchDispatchFn() {
      @Override public void dispatch(OutboxEvent event) {
        throw new AssertionError("the worker publishes whole batches");
      }

      @Override public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) {
        Map<UUID, Exception> failed = new HashMap<>();
        events.forEach(e -> {
          Exception error = failures.apply(e);
          if (error != null) {
            failed.put(e.id(), error);
          }
        });
        return failed;
      }
    };
  }

  /**
   * stop() interrupts a worker while its publisher waits for acknowledgements, and the publisher reports the
   * interrupt per event: the events go back as a stop, and the worker does not take it for a broker outage
   * (which would log a false outage WARN and make it wait before its next batch).
   */
  @Test
  void anInterruptReportedPerEventIsAStopNotABrokerOutage() {
    store.append(List.of(event("a"), event("b")));
    BatchDispatchFn interruptedWhileWaiting = answering(e -> {
      Thread.currentThread().interrupt(); // stop() interrupted the wait for the acknowledgements
      return new InterruptedException("waiting for the acknowledgement");
    });
    OutboxDispatcher.Builder options = OutboxDispatcher.builder().store(store).useClaim(true).listener(listener)
        .dispatchFn(interruptedWhileWaiting);
    WorkerChannel channel = new WorkerChannel(options, "w");
    Batch batch = new BatchReader(DispatchSettings.of(options, "w", false), channel, Set.of()).next();
    DispatchResult result;
    Duration outagePause;
    try {
      batch.send();
      batch.settle();
      result = batch.finish();
      outagePause = channel.outage().pause();
      assertThat(Thread.currentThread().isInterrupted()).as("the interrupt is kept for the caller").isTrue();
    } finally {
      Thread.interrupted();
    }
    assertThat(result.released()).isEqualTo(2);
    assertThat(reasons).containsExactlyInAnyOrder("a STOPPING", "b STOPPING");
    assertThat(outagePause).as("a stop is no broker outage").isNull();
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.PENDING, 2L);
  }

  @Test
  void anUnreachableBrokerAndAnAggregateStoppedByItsHeadAreToldApart() {
    OutboxEvent a1 = event("a");
    OutboxEvent a2 = event("a");
    OutboxEvent b1 = event("b");
    store.append(List.of(a1, a2, b1));
    DispatchResult result = OutboxDispatcher.builder().store(store).useClaim(true).preserveAggregateOrder(true)
        .listener(listener).dispatchFn(answering(e -> e.id().equals(a1.id()) ? new IllegalStateException("rejected")
            : e.id().equals(b1.id()) ? new PublishUnavailableException("no route to the broker") : null))
        .build().dispatchOnce();

    assertThat(result.retried()).isEqualTo(1);
    assertThat(reasons).containsExactlyInAnyOrder("b BROKER_UNAVAILABLE", "a ORDER_BLOCKED");
    assertThat(store.find(a2.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);
  }

  /** A pipelined worker claimed its next batch ahead; a pause hands it back as a pause, not as a stop. */
  @Test
  void aBatchClaimedAheadGoesBackAsPausedWhenTheDispatcherPauses() throws Exception {
    store.append(List.of(event("1"), event("2"), event("3")));
    CountDownLatch publishing = new CountDownLatch(1);
    CountDownLatch goOn = new CountDownLatch(1);
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).useClaim(true).batchSize(1)
        .listener(listener).dispatchFn(e -> {
          publishing.countDown();
          goOn.await();
        }).build()) {
      d.start();
      assertThat(publishing.await(5, TimeUnit.SECONDS)).isTrue();
      await().atMost(Duration.ofSeconds(5)) // the first batch is being published, the second claimed ahead
          .until(() -> store.countByStatus().get(OutboxStatus.PROCESSING) == 2L);
      d.pause();
      goOn.countDown();
      await().atMost(Duration.ofSeconds(5)).until(() -> store.countByStatus().get(OutboxStatus.PROCESSING) == 0L);
      assertThat(reasons).containsExactly("2 PAUSED");
    }
  }
}
