package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.testkit.OffsetClock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Why an event went back untried, as the listener hears it, and what a stop does not count as. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ReleaseTest {
  private final InMemoryOutboxStore store = new InMemoryOutboxStore(new OffsetClock());
  private final List<String> reasons = new CopyOnWriteArrayList<>();
  private final OutboxListener listener = new OutboxListener() {
    @Override public void onReleased(OutboxEvent event, String reason) {
      reasons.add(event.aggregateId() + " " + reason);
    }
  };

  private static OutboxEvent event(String aggregateId) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic("order.created").payload("{}").build();
  }

  /**
   * stop() interrupts a worker while its publisher waits for acknowledgements, and the publisher reports the
   * interrupt per event: the events go back as a stop, and the worker does not take it for a broker outage
   * (which would log a false outage WARN and make it wait before its next batch).
   */
  @Test
  void anInterruptReportedPerEventIsAStopNotABrokerOutage() {
    store.append(List.of(event("a"), event("b")));
    BatchDispatchFn interruptedWhileWaiting = new BatchDispatchFn() {
      @Override public void dispatch(OutboxEvent event) {
        throw new AssertionError("the worker publishes whole batches");
      }

      @Override public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) {
        Thread.currentThread().interrupt(); // stop() interrupted the wait for the acknowledgements
        Map<UUID, Exception> failures = new HashMap<>();
        events.forEach(e -> failures.put(e.id(), new InterruptedException("waiting for the acknowledgement")));
        return failures;
      }
    };
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
    assertThat(reasons).containsExactlyInAnyOrder("a dispatcher stopping", "b dispatcher stopping");
    assertThat(outagePause).as("a stop is no broker outage").isNull();
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.PENDING, 2L);
  }
}
