package io.mic.outbox.test;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * A publisher for tests that accepts every event and remembers it, in publication order. Thread-safe: the
 * workers of an {@code AsyncOutboxDispatcher} may publish while the test reads.
 *
 * <pre>{@code
 * RecordingDispatchFn published = new RecordingDispatchFn();
 * OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(published).build();
 * OutboxTesting.dispatchUntilEmpty(dispatcher);
 * assertThat(published.topics()).containsExactly("order.created", "order.paid");
 * }</pre>
 *
 * <p>Delivery is at-least-once, so the same event may be recorded more than once (a lease lost, a retry
 * after an unknown outcome): {@link #events()} keeps every publication, {@link #ids()} each id once.
 */
public final class RecordingDispatchFn implements DispatchFn {
  private final List<OutboxEvent> events = new ArrayList<>();

  @Override
  public synchronized void dispatch(OutboxEvent event) {
    events.add(event);
    notifyAll();
  }

  /** Every publication so far, in order, duplicates included. */
  public synchronized List<OutboxEvent> events() {
    return List.copyOf(events);
  }

  /** The ids published so far, each once, in the order of their first publication. */
  public synchronized List<UUID> ids() {
    return events.stream().map(OutboxEvent::id).distinct().toList();
  }

  /** The topic of every publication, in order. */
  public synchronized List<String> topics() {
    return events.stream().map(OutboxEvent::topic).toList();
  }

  /** The publications of one topic, in order. */
  public synchronized List<OutboxEvent> ofTopic(String topic) {
    return events.stream().filter(e -> e.topic().equals(topic)).toList();
  }

  /** The publications of one aggregate, in order: what a consumer of that aggregate saw. */
  public synchronized List<OutboxEvent> ofAggregate(String aggregateType, String aggregateId) {
    return events.stream()
        .filter(e -> e.aggregateType().equals(aggregateType) && e.aggregateId().equals(aggregateId)).toList();
  }

  /** How many times this event was published: 0, 1, or more after a redelivery. */
  public synchronized int timesPublished(UUID id) {
    return (int) events.stream().filter(e -> e.id().equals(id)).count();
  }

  /** The number of publications so far, duplicates included. */
  public synchronized int count() {
    return events.size();
  }

  /** Forgets everything recorded so far. */
  public synchronized void clear() {
    events.clear();
  }

  /**
   * Waits until at least {@code count} publications were recorded.
   *
   * @return the publications at that moment
   * @throws AssertionError after {@code timeout}, saying how many arrived and which ids
   */
  public synchronized List<OutboxEvent> awaitCount(int count, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (events.size() < count) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new AssertionError("expected at least " + count + " publications within " + timeout + ", got "
            + events.size() + ": " + events.stream().map(e -> e.id() + " (" + e.topic() + ")").toList());
      }
      wait(Math.max(1, left / 1_000_000));
    }
    return List.copyOf(events);
  }
}
