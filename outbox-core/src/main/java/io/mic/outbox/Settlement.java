package io.mic.outbox;

import io.mic.outbox.internal.ErrorText;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where one batch's outcomes are applied: each event is marked (now, or with the batch at its end), retried
 * or moved to the DLQ, or released untried; the counts, the listener and the logs follow. In ordered mode an
 * event that did not go through stops its aggregate for the rest of the batch: the later events of that
 * aggregate are held and released at the end.
 */
final class Settlement {
  private static final Logger LOG = LoggerFactory.getLogger(OutboxDispatcher.class);

  private final DispatchSettings s;
  /** Where the outcomes go: the batch's claim, or the store for a batch read without one. */
  private final ClaimedBatch batch;
  /** The batch's leases; {@code null} without claims. */
  private final LeaseKeeper.Lease lease;
  private final MarkRetry marks;
  /** Successes waiting for the batch's mark ({@link DispatchSettings#markAtEnd()}). */
  private final List<OutboxEvent> published = new ArrayList<>();
  private final Map<UUID, Long> publishNanos = new HashMap<>();
  /** Ordered mode: aggregates whose sequence stopped in this batch; their later events go back untried. */
  private final Set<List<String>> stopped = new HashSet<>();
  private final List<OutboxEvent> held = new ArrayList<>();
  private long flushedAtRenewal;
  private int dispatched;
  private int retried;
  private int dead;
  private int released;
  private int leaseLost;
  private int unavailable;
  private Exception unavailableCause;

  Settlement(DispatchSettings s, ClaimedBatch batch, LeaseKeeper.Lease lease) {
    this.s = s;
    this.batch = batch;
    this.lease = lease;
    this.marks = new MarkRetry(s, batch, lease != null);
  }

  /**
   * The events of a chunk that go out; the others are settled here: lost leases, events behind a stopped
   * aggregate (held), and events claimed more often than {@code maxAttempts} (their worker crashed or stalled).
   */
  List<OutboxEvent> admit(List<OutboxEvent> chunk) {
    List<OutboxEvent> todo = new ArrayList<>();
    for (OutboxEvent event : chunk) {
      if (lease != null && lease.isLost(event)) {
        lost(event);
      } else if (s.ordered() && stopped.contains(DispatchOrder.aggregateOf(event))) {
        held.add(event);
      } else if (s.useClaim() && event.attempts() > s.maxAttempts()) {
        dead(event, "claimed " + event.attempts() + " times without an outcome (maxAttempts " + s.maxAttempts()
            + "): its worker probably crashed or stalled while publishing it");
      } else {
        todo.add(event);
      }
    }
    return todo;
  }

  /**
   * Applies each event's outcome ({@code failures} by id; absent: acknowledged), for a chunk the publisher
   * answered event by event and for one whose whole publication failed alike. In a long claimed batch, marks
   * what went out so far once a renewal happened, before a stall can cost it.
   *
   * @param nanosEach the publication time of one event, for the listener
   */
  void apply(List<OutboxEvent> chunk, Map<UUID, Exception> failures, long nanosEach) {
    List<OutboxEvent> ok = new ArrayList<>();
    List<OutboxEvent> unreachable = new ArrayList<>();
    List<OutboxEvent> stopping = new ArrayList<>();
    for (OutboxEvent event : chunk) {
      Exception error = failures.get(event.id());
      switch (Outcome.of(error)) {
        case PUBLISHED -> {
          publishNanos.put(event.id(), nanosEach);
          ok.add(event);
        }
        case UNAVAILABLE -> {
          unavailable(1, error);
          unreachable.add(event);
          stop(event);
        }
        case STOPPING -> { // not an outage: the broker may well be up
          stopping.add(event);
          stop(event);
        }
        case FAILED -> failed(event, error);
      }
    }
    if (s.markAtEnd()) {
      published.addAll(ok);
    } else if (!ok.isEmpty()) {
      markDispatched(ok);
    }
    release(unreachable, ReleaseReason.BROKER_UNAVAILABLE);
    if (!stopping.isEmpty()) {
      Thread.currentThread().interrupt(); // a caught InterruptedException cleared it: kept for the caller
      release(stopping, ReleaseReason.STOPPING);
    }
    if (lease != null && lease.renewals() != flushedAtRenewal) {
      flush();
    }
  }

  /** The chunks after a stop go back untried: as a stop when the worker is interrupted, else for the broker. */
  void putBack(List<OutboxEvent> rest) {
    if (Thread.currentThread().isInterrupted()) {
      release(rest, ReleaseReason.STOPPING);
    } else {
      unavailable += rest.size(); // they wait for the broker too
      release(rest, ReleaseReason.BROKER_UNAVAILABLE);
    }
  }

  void releaseHeld() {
    release(held, ReleaseReason.ORDER_BLOCKED);
  }

  void release(List<OutboxEvent> events, ReleaseReason reason) {
    List<OutboxEvent> ours = events.stream().filter(e -> lease == null || !lease.isLost(e)).toList();
    if (ours.isEmpty()) {
      return;
    }
    settling(ours);
    Set<UUID> ids = batch.release(ours, s.backoff().initial());
    for (OutboxEvent e : ours) {
      if (ids.contains(e.id())) {
        released++;
        s.listener().onReleased(e, reason);
      } else {
        lost(e);
      }
    }
  }

  void flush() {
    if (lease != null) {
      flushedAtRenewal = lease.renewals();
    }
    if (!published.isEmpty()) {
      List<OutboxEvent> marking = List.copyOf(published);
      published.clear();
      markDispatched(marking);
    }
  }

  void reportTo(BrokerOutage outage) {
    outage.record(unavailable, published.size() + dispatched, unavailableCause);
  }

  boolean allDispatched(int events) {
    return dispatched == events;
  }

  DispatchResult result(int events) {
    return new DispatchResult(events, dispatched, retried, dead, released, leaseLost);
  }

  private void unavailable(int events, Exception cause) {
    unavailable += events;
    if (unavailableCause == null) {
      unavailableCause = cause;
    }
  }

  private void stop(OutboxEvent event) {
    if (s.ordered()) {
      stopped.add(DispatchOrder.aggregateOf(event));
    }
  }

  /** The worker is about to record these events' outcome: their leases need no renewal any more. */
  private void settling(Collection<OutboxEvent> settled) {
    if (lease != null) {
      lease.settle(settled);
    }
  }

  private void failed(OutboxEvent event, Exception error) {
    String text = ErrorText.of(error);
    int attempt = s.useClaim() ? event.attempts() : event.attempts() + 1;
    if (attempt >= s.maxAttempts()) {
      dead(event, text);
      return;
    }
    Duration delay = s.backoff().delay(attempt);
    stop(event); // a retry-waiting head blocks the rest of its aggregate
    settling(List.of(event));
    if (batch.scheduleRetry(event, delay, text)) {
      retried++;
      LOG.debug("{}: event {} failed (attempt {}/{}), retry in {}: {}", s.worker(), event.id(), attempt,
          s.maxAttempts(), delay, text);
      s.listener().onRetryScheduled(event, delay, text);
    } else {
      lost(event);
    }
  }

  private void dead(OutboxEvent event, String error) {
    if (s.hold()) {
      stop(event); // a held aggregate waits behind its dead event
    }
    settling(List.of(event));
    if (batch.markDead(event, error)) {
      dead++;
      LOG.warn("{}: event {} (topic {}, aggregate {}/{}) moved to the DLQ after {} attempts: {}", s.worker(),
          event.id(), event.topic(), event.aggregateType(), event.aggregateId(),
          s.useClaim() ? event.attempts() : event.attempts() + 1, error);
      s.listener().onDeadLettered(event, error);
    } else {
      lost(event);
    }
  }

  private void markDispatched(List<OutboxEvent> events) {
    settling(events);
    Set<UUID> marked = marks.mark(events);
    for (OutboxEvent e : events) {
      if (marked.contains(e.id())) {
        dispatched++;
        s.listener().onDispatched(e, Duration.ofNanos(publishNanos.getOrDefault(e.id(), 0L)));
      } else {
        lost(e);
      }
    }
  }

  private void lost(OutboxEvent event) {
    stop(event);
    leaseLost++;
    LOG.debug("{}: lease on event {} lost; another worker owns it now", s.worker(), event.id());
    s.listener().onLeaseLost(event);
  }
}
